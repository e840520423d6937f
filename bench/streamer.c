/* streamer.c -- toolgate's own load tool for what wrk cannot do: many
 * concurrent streaming (SSE) POSTs, time to first event and the arrival of
 * every later event, per stream.
 *
 * One thread, epoll, non-blocking sockets, one connection per stream
 * ("Connection: close"). Keeps CONC streams in flight until TOTAL have run,
 * opening at most RATE new ones per second. A stream counts as ok when
 * "data: [DONE]" arrived after a 200 status line.
 *
 *   streamer -p PORT -b BODY.json [-a HOST] [-u PATH] [-H "Name: value"]...
 *            [-c CONC] [-n TOTAL] [-r RATE] [-t TIMEOUT_S]
 *   streamer -k SECONDS -p PORT -b BODY.json [-a HOST] [-u PATH] [-H ...]
 *
 * Prints one line of key=value pairs (times in microseconds):
 *   ok failed events coalesced peak_open ttfb_p50 ttfb_p99 gap_p50 gap_p99
 *   gap_max wall_ms
 * and, when events carry the mock's send stamps (X-Mock-Stamp), lat_n
 * lat_p50 lat_p99.
 * ttfb: from connect() to the first byte of the first SSE event ("data:").
 * gap:  between two consecutive events of a stream, each event counted once
 *       at the read() that brought its first byte. An event whose first byte
 *       came in the same read() as the previous event's is "coalesced" and
 *       gives no gap sample. A delay every event suffers alike cancels out
 *       of a gap, so gaps show jitter, not per-chunk delay; that is lat:
 * ttfa: from connect() to the first non-empty tool-call argument fragment
 *       ("arguments":"x...), once per stream that has one: against the
 *       mock directly it is when the upstream sent it, through a proxy the
 *       difference is how long the proxy held it (ttfa_n ttfa_p50 ttfa_p99).
 * lat:  per stamped event, from the mock's send (its "@t" + 16-digit
 *       CLOCK_MONOTONIC microsecond, written as the piece goes to the
 *       socket) to the read() that brought the stamp here. Same machine,
 *       same clock, so this is the event's one-way latency.
 *
 * Build: cc -O2 -o streamer streamer.c   (no dependencies)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { ST_FREE, ST_CONNECT, ST_WRITE, ST_READ };

typedef struct {
    int fd, state;
    size_t woff;
    uint64_t t0, t_last;
    int got_status, status_ok, nevents, saw_done;
    char head[16];
    int headlen;
    int m_data, m_done; /* partial matches of "data:" / "data: [DONE]" */
    int m_stamp, in_stamp, ndigits; /* "@t" matched, then the stamp's digits */
    int m_args, args_next, got_args; /* "arguments":" matched, then its first byte */
    uint64_t stamp;
} conn;

static const char PAT_DATA[] = "data:";
static const char PAT_DONE[] = "data: [DONE]";
static const char PAT_STAMP[] = "@t";
static const char PAT_ARGS[] = "\"arguments\":\"";
#define STAMP_DIGITS 16

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

typedef struct {
    uint32_t *v;
    size_t n, cap;
} samples;

static void push(samples *s, uint64_t x)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4096;
        s->v = realloc(s->v, s->cap * sizeof(*s->v));
        if (!s->v) {
            perror("realloc");
            exit(2);
        }
    }
    s->v[s->n++] = x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static long pct(samples *s, double p)
{
    if (!s->n)
        return -1;
    size_t i = (size_t)(p / 100.0 * (double)s->n + 0.999999);
    if (i < 1)
        i = 1;
    if (i > s->n)
        i = s->n;
    return (long)s->v[i - 1];
}

/* Advances a streaming match of pat; returns 1 when it completes. */
static int step(int *m, const char *pat, size_t patlen, char c)
{
    if (c == pat[*m]) {
        if ((size_t)++*m == patlen) {
            *m = 0;
            return 1;
        }
        return 0;
    }
    *m = (c == pat[0]) ? 1 : 0;
    return 0;
}

/* Feeds one byte to the "@t" + STAMP_DIGITS scanner; returns 1 when a
 * whole stamp has been read into c->stamp. */
static int scan_stamp(conn *c, char ch)
{
    if (c->in_stamp) {
        if (ch < '0' || ch > '9') {
            c->in_stamp = 0;
            return 0;
        }
        c->stamp = c->stamp * 10 + (uint64_t)(ch - '0');
        if (++c->ndigits < STAMP_DIGITS)
            return 0;
        c->in_stamp = 0;
        return 1;
    }
    if (step(&c->m_stamp, PAT_STAMP, sizeof(PAT_STAMP) - 1, ch)) {
        c->in_stamp = 1;
        c->ndigits = 0;
        c->stamp = 0;
    }
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: streamer -p PORT -b BODY [-a HOST] [-u PATH] [-H 'K: V']... "
                    "[-c CONC] [-n TOTAL] [-r RATE/s] [-t TIMEOUT_S]\n");
    exit(2);
}

/* -k SECONDS: one keep-alive connection, one request at a time, for that
 * long; latency = from the first byte written to the last byte of the
 * response (Content-Length or chunked). wrk's own percentiles at one
 * connection disagreed with its request count on this machine, so the
 * one-connection latencies come from here. */
static int read_more(int fd, char **buf, size_t *len, size_t *cap)
{
    if (*cap - *len < 65536) {
        *cap = *cap * 2 + 65536;
        *buf = realloc(*buf, *cap);
        if (!*buf)
            exit(2);
    }
    ssize_t r = recv(fd, *buf + *len, *cap - *len - 1, 0);
    if (r <= 0)
        return -1;
    *len += (size_t)r;
    (*buf)[*len] = '\0';
    return 0;
}

/* Reads one whole response; returns its status, or -1. Leftover bytes are
 * an error (no pipelining here). */
static int one_response(int fd)
{
    static char *buf;
    static size_t cap;
    size_t len = 0;
    char *eoh;
    if (!buf) {
        cap = 1 << 20;
        buf = malloc(cap);
    }
    buf[0] = '\0';
    while (!(eoh = strstr(buf, "\r\n\r\n")))
        if (read_more(fd, &buf, &len, &cap))
            return -1;
    int status = atoi(buf + 9);
    size_t hlen = (size_t)(eoh + 4 - buf);
    long clen = -1;
    int chunked = 0;
    for (char *l = strstr(buf, "\r\n"); l && l < eoh; l = strstr(l + 2, "\r\n")) {
        if (strncasecmp(l + 2, "Content-Length:", 15) == 0)
            clen = atol(l + 17);
        else if (strncasecmp(l + 2, "Transfer-Encoding:", 18) == 0 && strcasestr(l + 2, "chunked") &&
                 strcasestr(l + 2, "chunked") < strstr(l + 2, "\r\n"))
            chunked = 1;
    }
    if (!chunked) {
        if (clen < 0)
            return -1; /* close-delimited: not for keep-alive */
        while (len < hlen + (size_t)clen)
            if (read_more(fd, &buf, &len, &cap))
                return -1;
        return status;
    }
    size_t pos = hlen;
    for (;;) { /* chunk-size line, data, CRLF; a 0 chunk then CRLF ends */
        char *crlf;
        while (!(crlf = strstr(buf + pos, "\r\n"))) {
            size_t off = pos;
            if (read_more(fd, &buf, &len, &cap))
                return -1;
            pos = off;
        }
        long n = strtol(buf + pos, NULL, 16);
        pos = (size_t)(crlf + 2 - buf);
        if (n == 0) {
            while (!strstr(buf + pos, "\r\n")) /* trailers not expected */
                if (read_more(fd, &buf, &len, &cap))
                    return -1;
            return status;
        }
        while (len < pos + (size_t)n + 2)
            if (read_more(fd, &buf, &len, &cap))
                return -1;
        pos += (size_t)n + 2;
    }
}

static int keepalive_mode(struct sockaddr_in *sa, const char *req, size_t reqlen, int secs)
{
    samples lat = { 0 };
    long errors = 0, non2xx = 0, reconnects = 0;
    int fd = -1;
    uint64_t end = now_us() + (uint64_t)secs * 1000000u, start = now_us();
    while (now_us() < end) {
        if (fd < 0) {
            fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            if (connect(fd, (struct sockaddr *)sa, sizeof(*sa)) < 0) {
                close(fd);
                fd = -1;
                errors++;
                usleep(10000);
                continue;
            }
            reconnects++;
        }
        uint64_t t0 = now_us();
        size_t off = 0;
        while (off < reqlen) {
            ssize_t w = send(fd, req + off, reqlen - off, MSG_NOSIGNAL);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        int st = off == reqlen ? one_response(fd) : -1;
        uint64_t t1 = now_us();
        if (st < 0) {
            errors++;
            close(fd);
            fd = -1;
            continue;
        }
        if (st < 200 || st > 299)
            non2xx++;
        push(&lat, t1 - t0);
    }
    uint64_t wall = now_us() - start;
    qsort(lat.v, lat.n, sizeof(uint32_t), cmp_u32);
    printf("requests=%zu rps=%.0f p50=%ld p99=%ld max=%ld errors=%ld non2xx=%ld connects=%ld\n", lat.n,
           (double)lat.n * 1e6 / (double)wall, pct(&lat, 50), pct(&lat, 99),
           lat.n ? (long)lat.v[lat.n - 1] : -1L, errors, non2xx, reconnects);
    return errors ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *host = "127.0.0.1", *path = "/v1/chat/completions", *bodyfile = NULL;
    int port = 0, conc = 1, total = 1, timeout_s = 60, keepalive_s = 0;
    double rate = 0;
    char extra[4096] = "";
    int opt;
    while ((opt = getopt(argc, argv, "a:p:u:b:H:c:n:r:t:k:")) != -1) {
        switch (opt) {
        case 'a': host = optarg; break;
        case 'p': port = atoi(optarg); break;
        case 'u': path = optarg; break;
        case 'b': bodyfile = optarg; break;
        case 'H':
            if (strlen(extra) + strlen(optarg) + 3 >= sizeof(extra))
                usage();
            strcat(extra, optarg);
            strcat(extra, "\r\n");
            break;
        case 'c': conc = atoi(optarg); break;
        case 'n': total = atoi(optarg); break;
        case 'r': rate = atof(optarg); break;
        case 't': timeout_s = atoi(optarg); break;
        case 'k': keepalive_s = atoi(optarg); break;
        default: usage();
        }
    }
    if (!port || !bodyfile || conc < 1 || total < 1)
        usage();
    if (conc > total)
        conc = total;

    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    FILE *f = fopen(bodyfile, "rb");
    if (!f) {
        perror(bodyfile);
        return 2;
    }
    fseek(f, 0, SEEK_END);
    long blen = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *body = malloc((size_t)blen + 1);
    if (!body || fread(body, 1, (size_t)blen, f) != (size_t)blen) {
        perror("read body");
        return 2;
    }
    fclose(f);
    size_t hcap = strlen(path) + strlen(host) + strlen(extra) + 256;
    char *req = malloc(hcap + (size_t)blen);
    int hl = snprintf(req, hcap,
                      "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                      "Accept: */*\r\nContent-Length: %ld\r\n%s%s\r\n",
                      path, host, port, blen, keepalive_s ? "" : "Connection: close\r\n", extra);
    memcpy(req + hl, body, (size_t)blen);
    size_t reqlen = (size_t)hl + (size_t)blen;

    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        fprintf(stderr, "streamer: bad address %s\n", host);
        return 2;
    }
    if (keepalive_s > 0)
        return keepalive_mode(&sa, req, reqlen, keepalive_s);

    conn *cs = calloc((size_t)conc, sizeof(*cs));
    int *freelist = malloc((size_t)conc * sizeof(int));
    int nfree = conc;
    for (int i = 0; i < conc; i++) {
        cs[i].fd = -1;
        freelist[i] = conc - 1 - i;
    }
    int ep = epoll_create1(0);
    struct epoll_event *evs = malloc(1024 * sizeof(*evs));
    samples ttfb = { 0 }, gap = { 0 }, lat = { 0 }, ttfa = { 0 };
    long ok = 0, failed = 0, events = 0, coalesced = 0, launched = 0, open_now = 0, peak_open = 0;
    long fail_status = 0, fail_io = 0, fail_eof = 0, fail_timeout = 0;
    int first_errno = 0;
    char buf[65536];
    uint64_t start = now_us(), deadline = start + (uint64_t)timeout_s * 1000000u;

    for (;;) {
        uint64_t t = now_us();
        /* Launch new streams. */
        while (nfree > 0 && launched < total &&
               (rate <= 0 || (double)launched < rate * (double)(t - start) / 1e6 + 1)) {
            int i = freelist[--nfree];
            conn *c = &cs[i];
            memset(c, 0, sizeof(*c));
            c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            launched++;
            if (c->fd < 0) {
                if (!first_errno)
                    first_errno = errno;
                failed++, fail_io++;
                freelist[nfree++] = i;
                continue;
            }
            int one = 1;
            setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            c->t0 = now_us();
            int r = connect(c->fd, (struct sockaddr *)&sa, sizeof(sa));
            if (r < 0 && errno != EINPROGRESS) {
                if (!first_errno)
                    first_errno = errno;
                close(c->fd);
                c->fd = -1;
                failed++, fail_io++;
                freelist[nfree++] = i;
                continue;
            }
            c->state = ST_CONNECT;
            struct epoll_event ev = { .events = EPOLLOUT, .data.u32 = (uint32_t)i };
            epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
            open_now++;
            if (open_now > peak_open)
                peak_open = open_now;
        }
        if (launched >= total && nfree == conc)
            break;
        if (t > deadline) {
            for (int i = 0; i < conc; i++)
                if (cs[i].fd >= 0) {
                    close(cs[i].fd);
                    cs[i].fd = -1;
                    failed++, fail_timeout++;
                }
            break;
        }
        int wait_ms = 100;
        if (rate > 0 && launched < total && nfree > 0)
            wait_ms = 1;
        int n = epoll_wait(ep, evs, 1024, wait_ms);
        for (int k = 0; k < n; k++) {
            int i = (int)evs[k].data.u32;
            conn *c = &cs[i];
            int done = 0, bad = 0;
            if (c->state == ST_CONNECT) {
                int err = 0;
                socklen_t el = sizeof(err);
                getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
                if (err) {
                    if (!first_errno)
                        first_errno = err;
                    bad = 1, fail_io++;
                } else
                    c->state = ST_WRITE;
            }
            if (!bad && c->state == ST_WRITE) {
                while (c->woff < reqlen) {
                    ssize_t w = send(c->fd, req + c->woff, reqlen - c->woff, MSG_NOSIGNAL);
                    if (w < 0) {
                        if (errno != EAGAIN) {
                            if (!first_errno)
                                first_errno = errno;
                            bad = 1, fail_io++;
                        }
                        break;
                    }
                    c->woff += (size_t)w;
                }
                if (!bad && c->woff == reqlen) {
                    c->state = ST_READ;
                    struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
                    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                }
            } else if (!bad && c->state == ST_READ) {
                for (;;) {
                    ssize_t r = recv(c->fd, buf, sizeof(buf), 0);
                    if (r < 0) {
                        if (errno != EAGAIN) {
                            if (!first_errno)
                                first_errno = errno;
                            bad = 1, fail_io++;
                        }
                        break;
                    }
                    if (r == 0) {
                        if (!c->saw_done)
                            bad = 1, fail_eof++;
                        done = 1;
                        break;
                    }
                    uint64_t tr = now_us();
                    int new_events = 0;
                    for (ssize_t j = 0; j < r; j++) {
                        char ch = buf[j];
                        if (!c->got_status) {
                            if (c->headlen < (int)sizeof(c->head) - 1)
                                c->head[c->headlen++] = ch;
                            if (c->headlen >= 12) {
                                c->got_status = 1;
                                c->status_ok = memcmp(c->head + 9, "200", 3) == 0;
                            }
                        }
                        if (step(&c->m_data, PAT_DATA, sizeof(PAT_DATA) - 1, ch))
                            new_events++;
                        if (step(&c->m_done, PAT_DONE, sizeof(PAT_DONE) - 1, ch))
                            c->saw_done = 1;
                        if (scan_stamp(c, ch) && tr >= c->stamp)
                            push(&lat, tr - c->stamp);
                        if (c->args_next) {
                            c->args_next = 0;
                            if (ch != '"' && !c->got_args) {
                                c->got_args = 1;
                                push(&ttfa, tr - c->t0);
                            }
                        }
                        if (step(&c->m_args, PAT_ARGS, sizeof(PAT_ARGS) - 1, ch))
                            c->args_next = 1;
                    }
                    if (new_events) {
                        /* An event is counted when "data:" completes; its
                         * first byte came in this read or the one before,
                         * close enough at these sizes. */
                        if (c->nevents == 0)
                            push(&ttfb, tr - c->t0);
                        else
                            push(&gap, tr - c->t_last);
                        c->nevents += new_events;
                        events += new_events;
                        coalesced += new_events - 1;
                        c->t_last = tr;
                    }
                    if (c->got_status && !c->status_ok) {
                        bad = 1, fail_status++;
                        break;
                    }
                    if (c->saw_done) {
                        done = 1;
                        break;
                    }
                }
            }
            if (bad || done) {
                if (bad)
                    failed++;
                else
                    ok++;
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                close(c->fd);
                c->fd = -1;
                c->state = ST_FREE;
                freelist[nfree++] = i;
                open_now--;
            }
        }
    }
    uint64_t wall = now_us() - start;
    qsort(ttfb.v, ttfb.n, sizeof(uint32_t), cmp_u32);
    qsort(gap.v, gap.n, sizeof(uint32_t), cmp_u32);
    qsort(lat.v, lat.n, sizeof(uint32_t), cmp_u32);
    qsort(ttfa.v, ttfa.n, sizeof(uint32_t), cmp_u32);
    printf("ok=%ld failed=%ld events=%ld coalesced=%ld peak_open=%ld ttfb_p50=%ld ttfb_p99=%ld "
           "gap_p50=%ld gap_p99=%ld gap_max=%ld wall_ms=%lu",
           ok, failed, events, coalesced, peak_open, pct(&ttfb, 50), pct(&ttfb, 99), pct(&gap, 50),
           pct(&gap, 99), gap.n ? (long)gap.v[gap.n - 1] : -1L, (unsigned long)(wall / 1000));
    if (lat.n)
        printf(" lat_n=%zu lat_p50=%ld lat_p99=%ld", lat.n, pct(&lat, 50), pct(&lat, 99));
    if (ttfa.n)
        printf(" ttfa_n=%zu ttfa_p50=%ld ttfa_p99=%ld", ttfa.n, pct(&ttfa, 50), pct(&ttfa, 99));
    if (failed)
        printf(" fail_status=%ld fail_io=%ld fail_eof=%ld fail_timeout=%ld first_error=%s", fail_status,
               fail_io, fail_eof, fail_timeout, first_errno ? strerror(first_errno) : "-");
    printf("\n");
    return failed ? 1 : 0;
}
