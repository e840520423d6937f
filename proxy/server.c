/* server.c -- the workers: their event loop, set-up, reload and shutdown.
 *
 * Design. There is no thread per request. toolgate runs N workers (one per
 * core by default); each is a single event loop over one epoll set that
 * holds: its own libmicrohttpd daemon (external epoll mode, listening on its
 * own SO_REUSEPORT socket so the kernel spreads connections), the sockets of
 * its own curl multi handle, its client sockets (a parked kept-alive
 * connection's next bytes, a waiting client's close: front.c), and an
 * eventfd for control (stop, reload). A request lives and dies on the worker
 * that accepted it, so the request path takes no lock and makes no thread
 * hand-off: the client connection is suspended while upstream has nothing
 * for it, and resumed from the curl callbacks of the same thread.
 *
 * The network code knows nothing of dialects. It calls tg_pipeline_request()
 * on the parsed body, tg_pipeline_response() on a whole answer, and feeds
 * stream events through tg_stream_*() (sanitize/, repair/), then moves bytes.
 *
 * The proxy's request path is split by responsibility into files that
 * call only downward (proxy/worker.h has the order): the request object
 * (request.c), the upstream's decisions (retry.c), the agent APIs' glue
 * (bridges.c), the body prepared for its route (prepare.c), curl's
 * sockets (upsock.c), the upstream transfer (upstream.c) and the front
 * door (front.c). This file, the top, runs them: one loop per worker,
 * started and stopped here, with the conf swapped on reload.
 */
#include "proxy/server.h"

#include <errno.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/alloc.h"
#include "proxy/bridges.h"
#include "proxy/embed_wait.h"
#include "proxy/front.h"
#include "proxy/log.h"
#include "proxy/upconn.h"
#include "proxy/upsock.h"
#include "proxy/upstream.h"

/* ---- the loop -------------------------------------------------------------- */

static void sweep_timeouts(worker *w, uint64_t t)
{
    for (tg_req *r = w->inflight, *next; r; r = next) {
        next = r->next;
        /* Watch the client socket of requests that wait long enough to be
         * worth two syscalls; quick ones finish before it matters. */
        if (r->client.conn && r->client.fd < 0 && !r->client.gone && r->client.suspended &&
            t - r->t_start > 50000)
            watch_client(r);
        if (r->up.easy || r->up.own)
            time_out_if_late(r, t);
    }
    upconn_sweep(w, t);
    tg_store *st = w->srv->items;
    if (st->ops->tick)
        st->ops->tick(st, w->id, t);
}

static void take_new_conf(worker *w)
{
    tg_conf *n = atomic_exchange(&w->pending_conf, NULL);
    if (n) {
        tg_conf_unref(w->conf);
        w->conf = n;
    }
}

/* SIGTERM. The listener stays open through shutdown_grace, so /readyz
 * answers 503 (a load balancer asking sees "draining", not a refused
 * connection) and requests that still come are served, each answer
 * closing its connection. */
static void begin_drain(worker *w)
{
    if (w->draining)
        return;
    w->draining = true;
    conns_unpark(w, UINT64_MAX);  /* each answer now closes its connection */
    w->drain_deadline = now_us() + (uint64_t)w->conf->shutdown_grace_ms * 1000;
}

/* shutdown_grace has passed: every request still open gets an end in its
 * API's shape -- a stream the error event of a cut stream (and [DONE] on
 * chat), a request still waiting for upstream a 503 -- and its connection
 * is resumed, so the answers can be written before the daemon stops (it
 * refuses to stop while a connection is suspended). */
static void end_open_requests(worker *w)
{
    static const char msg[] = "toolgate is shutting down and shutdown_grace has passed; the "
                              "stream was cut";
    for (tg_req *r = w->inflight, *next; r; r = next) {
        next = r->next;
        if (!r->client.conn || r->client.gone || r->state == RQ_ANSWERED || r->stream.done)
            continue;
        if (r->state == RQ_READ)
            continue;  /* still reading its body: closed with the daemon */
        req_ref(r);
        stop_upstream(r);
        if (r->up.retry_at) {
            r->up.retry_at = 0;
            w->n_retry_wait--;
        }
        tg_metrics_limit(w->metrics, TG_LIMIT_SHUTDOWN);
        if (r->stream.repair) {
            tg_stream_fail(r->stream.repair, "shutting_down", msg, stream_dst(r));
            bridge_flush(r, true);
            r->stream.done = true;
        } else if (r->stream.raw) {
            raw_stream_error(r, "shutting_down", msg);
            r->stream.done = true;
        } else if (r->state == RQ_WAIT) {
            set_error(r, 503, "server_error", "shutting_down", NULL,
                      "toolgate is shutting down and shutdown_grace has passed before upstream "
                      "answered");
        }
        req_resume(r);
        req_unref(r);
    }
}

/* The drain's end: when no worker has a request open (a worker done
 * before the others keeps serving: its listener still gets connections,
 * /readyz among them), or at shutdown_grace, when the open requests are
 * ended and the loop runs a last second to write their ends. True when
 * it is over. */
static bool drain_over(worker *w)
{
    uint64_t t = now_us();
    if (atomic_load_explicit(&w->srv->open_reqs, memory_order_relaxed) == 0)
        return true;
    if (t < w->drain_deadline)
        return false;
    if (w->drain_cut)
        return true;
    w->drain_cut = true;
    tg_log(TG_LOG_WARN, "shutdown_grace passed with %d requests open: ending them",
           w->n_inflight);
    end_open_requests(w);
    w->drain_deadline = t + 1000000;
    return false;
}

static void run_curl_timeout(worker *w)
{
    int running;
    if (w->curl_deadline_ms >= 0 && (long)(now_us() / 1000) >= w->curl_deadline_ms) {
        w->curl_deadline_ms = -1;
        curl_multi_socket_action(w->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    }
}

static int loop_timeout_ms(worker *w)
{
    if (w->mhd_pending || upconn_has_due(w))  /* a paused round reads again (upconn_unpause) */
        return 0;
    long t = w->n_retry_wait ? 20 : 250;
    if (w->resumeq) {  /* the batch's window, rounded up */
        uint64_t u = now_us();
        long d = w->resume_due > u ? (long)((w->resume_due - u + 999) / 1000) : 0;
        t = d < t ? d : t;
    }
    long now = (long)(now_us() / 1000);
    if (w->curl_deadline_ms >= 0) {
        long d = w->curl_deadline_ms - now;
        t = d < 0 ? 0 : (d < t ? d : t);
    }
    MHD_UNSIGNED_LONG_LONG mt;
    if (MHD_get_timeout(w->mhd, &mt) == MHD_YES && (long)mt < t)
        t = (long)mt;
    return (int)t;
}

/* MHD processes a resumed connection only on the run after the one that
 * noticed the resume, so run until it has nothing due (bounded). */
static void run_mhd_now(worker *w)
{
    for (int i = 0; i < 4; i++) {
        w->mhd_pending = false;
        MHD_run(w->mhd);
        if (w->suspendq)
            req_flush_suspends(w);
        if (!tg_list_empty(&w->park_cands))
            conns_park(w);
        MHD_UNSIGNED_LONG_LONG t;
        if (!w->mhd_pending && (MHD_get_timeout(w->mhd, &t) != MHD_YES || t > 0))
            break;
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    struct epoll_event evs[256];
    for (;;) {
        if (atomic_load(&w->stop))
            begin_drain(w);
        if (w->draining && drain_over(w))
            break;
        int n = epoll_wait(w->epfd, evs, 256, loop_timeout_ms(w));
        bool run_mhd = n == 0;
        for (int i = 0; i < n; i++) {
            uint64_t tag = evs[i].data.u64;
            switch (TAG_KIND(tag)) {
            case K_MHD:
                run_mhd = true;
                break;
            case K_CTL: {
                uint64_t v;
                ssize_t rd = read(w->ctlfd, &v, sizeof v);
                (void)rd;
                take_new_conf(w);
                break;
            }
            case K_CURL:
                on_curl_event(w, TAG_FD(tag), evs[i].events);
                break;
            case K_UPCONN:
                upconn_event(w, tag, evs[i].events);
                break;
            case K_STORE:
                w->srv->items->ops->event(w->srv->items, w->id, evs[i].events);
                break;
            case K_CONN:
                conn_event(w, tag, evs[i].events);
                run_mhd = true;
                break;
            case K_CLIENT: {
                tg_req *r = find_by_client(w, TAG_FD(tag), TAG_GEN(tag));
                if (r)
                    on_client_hangup(r);
                run_mhd = true;
                break;
            }
            }
        }
        run_curl_timeout(w);
        check_curl_done(w);
        if (w->resumeq && (w->draining || now_us() >= w->resume_due))
            flush_resumes(w);
        /* MHD may have work no event announces (a connection it has not
         * read to EAGAIN stays on its ready list): curl events alone must
         * not starve it. */
        MHD_UNSIGNED_LONG_LONG mt;
        if (!run_mhd && MHD_get_timeout(w->mhd, &mt) == MHD_YES && mt == 0)
            run_mhd = true;
        if (run_mhd || w->mhd_pending || w->draining)
            run_mhd_now(w);
        /* A request MHD just handed us usually starts a transfer with a zero
         * timeout: act now rather than after another epoll_wait. */
        run_curl_timeout(w);
        check_curl_done(w);
        /* A quick upstream may have answered during that transfer start:
         * hand it to MHD now rather than after another epoll_wait. */
        if (w->mhd_pending)
            run_mhd_now(w);
        uint64_t t = now_us();
        if (w->n_retry_wait)
            fire_due_retries(w, t);
        if (t >= w->next_sweep) {
            w->next_sweep = t + 200000;
            sweep_timeouts(w, t);
            sweep_heads(w, t);
            conns_unpark(w, t);
        }
    }
    return NULL;
}

/* ---- set-up ------------------------------------------------------------------ */

/* A listening socket on host:port; shared: with SO_REUSEPORT, which gives
 * every worker its own socket on the one port. 0 or -1 with err. */
static int bind_listener(const char *host, int port, bool shared, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int rc = getaddrinfo(host, ps, &hints, &ai);
    if (rc) {
        snprintf(err, errlen, "listen %s:%d: %s", host, port, gai_strerror(rc));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (shared)
            setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 4096)) {
            snprintf(err, errlen, "listen %s:%d: %s%s", host, port, strerror(errno),
                     errno == EADDRINUSE ? " (another program, or another toolgate, listens "
                                           "there)"
                                         : "");
            close(fd);
            fd = -1;
        }
    } else {
        snprintf(err, errlen, "socket: %s", strerror(errno));
    }
    freeaddrinfo(ai);
    return fd;
}

/* SO_REUSEPORT would also let a second toolgate (or any program of the
 * same user that sets it) bind beside the first and take half its
 * connections. So before the workers bind, the port is taken once
 * without it: that fails with "address in use" whoever listens there,
 * and is let go at once for the workers' sockets. */
static int port_free(const char *host, int port, char *err, size_t errlen)
{
    int fd = bind_listener(host, port, false, err, errlen);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

static int open_listener(const char *host, int port, char *err, size_t errlen)
{
    return bind_listener(host, port, true, err, errlen);
}

/* A put the store sent without waiting failed later (store.h). */
static void store_put_failed(void *ud)
{
    worker *w = ud;
    tg_metrics_store_error(w->metrics, "put");
}

static int worker_start(server *s, worker *w, int id, tg_conf *conf, const char *host, int port,
                        char *err, size_t errlen)
{
    w->id = id;
    w->srv = s;
    w->body_bytes = &s->body_bytes;
    w->conf = tg_conf_ref(conf);
    w->curl_deadline_ms = -1;
    upstream_accept_encoding(w);
    upstream_proxy_env(w);
    upstream_tls_init(w);
    tg_random_init(&w->rng);
    w->listen_fd = open_listener(host, port, err, errlen);
    if (w->listen_fd < 0)
        return -1;
    /* The pool holds the headers and the read buffer, so its size is how
     * much of a body one recv() takes: with 32 KB over max_header a 184 KB
     * agent request takes 8 reads instead of 25 (big-100 at 64 connections:
     * 5,600 req/s instead of 4,950). But MHD zeroes half the pool of every
     * connection, and an open stream is mostly its pool: 5,000 streams
     * cost 33 KB each with 8 KB over max_header, 51 KB with 32 KB. Streams
     * that stay open for minutes win. */
    size_t memlimit = conf->max_header + 8 * 1024;
    /* MHD counts per daemon and the kernel spreads a client's connections
     * over the workers' sockets evenly: each worker takes its share of
     * max_conns_per_ip (0: MHD's "no limit") */
    unsigned per_ip = conf->max_conns_per_ip
                          ? (unsigned)((conf->max_conns_per_ip + conf->threads - 1) / conf->threads)
                          : 0;
    w->mhd = MHD_start_daemon(
        MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO, 0, NULL, NULL, on_request, w,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)w->listen_fd, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, w, MHD_OPTION_NOTIFY_CONNECTION, on_connection, w,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)300,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)60000, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        memlimit, MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip, MHD_OPTION_END);
    if (!w->mhd) {
        snprintf(err, errlen, "cannot start the HTTP front end on %s:%d", host, port);
        return -1;
    }
    w->epfd = epoll_create1(EPOLL_CLOEXEC);
    w->ctlfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(w->mhd, MHD_DAEMON_INFO_EPOLL_FD);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG(K_MHD, 0, di->epoll_fd)};
    epoll_ctl(w->epfd, EPOLL_CTL_ADD, di->epoll_fd, &ev);
    ev.data.u64 = TAG(K_CTL, 0, w->ctlfd);
    epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->ctlfd, &ev);
    w->multi = curl_multi_init();
    curl_multi_setopt(w->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
    curl_multi_setopt(w->multi, CURLMOPT_SOCKETDATA, w);
    curl_multi_setopt(w->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
    curl_multi_setopt(w->multi, CURLMOPT_TIMERDATA, w);
    curl_multi_setopt(w->multi, CURLMOPT_MAXCONNECTS, 512L);
    w->cache = tg_cache_new(256, 64u << 20);
    w->metrics = tg_metrics_worker(s->metrics, id);
    if (s->items->ops->attach) {  /* Redis on this loop (store.h) */
        tg_store_loop loop = {.epfd = w->epfd, .tag = TAG(K_STORE, 0, 0),
                              .put_failed = store_put_failed, .ud = w};
        s->items->ops->attach(s->items, id, &loop);
    }
    upstream_warm(w);  /* before the thread: /readyz counts it from the start */
    return pthread_create(&w->thread, NULL, worker_main, w) ? -1 : 0;
}

static void worker_cleanup(worker *w)
{
    if (!w->srv)  /* never started (the port was taken): nothing of its own */
        return;
    /* libmicrohttpd aborts the process when stopped with a connection
     * suspended: a client that did not take its end in time is resumed
     * (and closed by the stop) */
    for (tg_req *r = w->inflight; r; r = r->next)
        req_resume(r);
    flush_resumes(w);
    conns_unpark(w, UINT64_MAX);
    if (w->mhd)
        MHD_stop_daemon(w->mhd);
    /* Anything still holding a transfer after the grace period is dropped. */
    for (tg_req *r = w->inflight, *next; r; r = next) {
        next = r->next;
        stop_upstream(r);
    }
    if (w->srv->items->ops->detach)  /* its fetches end DOWN, their requests let go */
        w->srv->items->ops->detach(w->srv->items, w->id);
    upconn_free_all(w);
    embed_wait_free(w);
    while (w->n_spare)
        curl_easy_cleanup(w->spare[--w->n_spare]);
    req_free_spares(w);
    if (w->multi)
        curl_multi_cleanup(w->multi);
    upstream_tls_free(w);
    free(w->upfd);
    free(w->conns);
    if (w->epfd > 0)
        close(w->epfd);
    if (w->ctlfd > 0)
        close(w->ctlfd);
    tg_cache_free(w->cache);
    tg_conf_unref(atomic_exchange(&w->pending_conf, NULL));
    tg_conf_unref(w->conf);
}

static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* A route whose api_key names an unset variable sends the client's own
 * key upstream, and a client without one would meet a bare 401 or 502 on
 * its first request: said once per route, at start and on reload
 * (prepare.c answers such a request with an error naming the variable). */
static void warn_keyless_routes(const tg_conf *c)
{
    for (int i = 0; i < c->n_routes; i++) {
        const tg_route *r = &c->routes[i];
        if (r->api_key_var)
            tg_log(TG_LOG_WARN,
                   "route %s: api_key is ${%s}, which is unset or empty: requests to this route "
                   "fail until %s is set and toolgate restarted (a client may send its own key "
                   "in x-upstream-authorization)",
                   r->name, r->api_key_var, r->api_key_var);
    }
}

static void reload(server *s, const char *path)
{
    tg_buf errs = {0};
    tg_conf *n = tg_conf_load(path, &errs);
    if (!n) {
        tg_log(TG_LOG_ERROR, "reload of %s rejected, the running conf stays:\n%s", path,
               errs.data ? errs.data : "");
        tg_buf_free(&errs);
        return;
    }
    tg_buf_free(&errs);
    for (int i = 0; i < s->n; i++) {
        tg_conf_unref(atomic_exchange(&s->workers[i].pending_conf, tg_conf_ref(n)));
        uint64_t one = 1;
        ssize_t wr = write(s->workers[i].ctlfd, &one, sizeof one);
        (void)wr;
    }
    tg_log(TG_LOG_INFO, "reloaded %s: %d routes", path, n->n_routes);
    warn_keyless_routes(n);
    tg_conf_unref(n);
}

int tg_server_run(tg_conf *conf, const char *conf_path, const char *listen_override)
{
    char *host = tg_strdup(conf->listen_host);
    int port = conf->listen_port;
    if (listen_override) {
        const char *colon = strrchr(listen_override, ':');
        if (!colon) {
            fprintf(stderr, "toolgate: --listen: expected HOST:PORT\n");
            free(host);
            return 2;
        }
        free(host);
        host = tg_strndup(listen_override, (size_t)(colon - listen_override));
        if (host[0] == '[') {
            memmove(host, host + 1, strlen(host));
            host[strlen(host) - 1] = '\0';
        }
        port = atoi(colon + 1);
    }
    raise_fd_limit();
    /* Request bodies of a few hundred KB come and go at thousands a second:
     * keep them on the workers' heaps instead of an mmap, page faults and
     * munmap for each (glibc's dynamic threshold also trims worker heaps
     * back with madvise, so the next body faults its pages in again). */
    mallopt(M_MMAP_THRESHOLD, 8 << 20);
    mallopt(M_TRIM_THRESHOLD, 16 << 20);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    signal(SIGPIPE, SIG_IGN);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    server s = {0};
    s.n = conf->threads;
    s.workers = tg_calloc((size_t)s.n, sizeof *s.workers);
    s.metrics = tg_metrics_new(s.n);
    char err[320] = "";
    s.items = tg_store_open(conf, s.n, err, sizeof err);
    if (!s.items) {
        fprintf(stderr, "toolgate: %s\n", err);
        tg_metrics_free(s.metrics);
        free(s.workers);
        free(host);
        curl_global_cleanup();
        return 1;
    }
    tg_log(TG_LOG_INFO, "Responses items kept in %s", s.items->name);
    int started = 0;
    bool free_port = port_free(host, port, err, sizeof err) == 0;
    if (!free_port)
        fprintf(stderr, "toolgate: %s\n", err);
    for (int i = 0; free_port && i < s.n; i++) {
        if (worker_start(&s, &s.workers[i], i, conf, host, port, err, sizeof err)) {
            fprintf(stderr, "toolgate: %s\n", err);
            break;
        }
        started++;
    }
    int code = 0;
    if (free_port && started == s.n) {
        atomic_store(&s.ready, 1);
        tg_log(TG_LOG_INFO, "listening on %s:%d with %d workers, %d routes (%s)", host, port, s.n,
               conf->n_routes, conf_path ? conf_path : "-");
        warn_keyless_routes(conf);
        for (;;) {
            int sig;
            if (sigwait(&set, &sig))
                continue;
            if (sig == SIGHUP && conf_path) {
                reload(&s, conf_path);
                continue;
            }
            if (sig == SIGTERM || sig == SIGINT)
                break;
        }
        tg_log(TG_LOG_INFO, "stopping: finishing requests in flight");
    } else {
        code = 1;
    }
    for (int i = 0; i < started; i++) {
        atomic_store(&s.workers[i].stop, 1);
        uint64_t one = 1;
        ssize_t wr = write(s.workers[i].ctlfd, &one, sizeof one);
        (void)wr;
    }
    for (int i = 0; i < started; i++)
        pthread_join(s.workers[i].thread, NULL);
    for (int i = 0; i < s.n; i++)
        worker_cleanup(&s.workers[i]);
    free(s.workers);
    tg_metrics_free(s.metrics);
    tg_store_free(s.items);
    free(host);
    curl_global_cleanup();
    return code;
}
