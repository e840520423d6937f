/* upsock.c -- the upstream's sockets in the worker's epoll set: curl's
 * multi socket interface (which socket wants what, when curl wants to be
 * woken) served by the worker's one loop.
 *
 * Below proxy/upstream.c (whose easy handles open and close their sockets
 * here) and proxy/server.c (whose loop hands each curl event here). Knows
 * nothing of requests.
 */
#include "proxy/upsock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/alloc.h"

/* Upstream sockets stay in the worker's epoll set between transfers: curl
 * removes a keep-alive connection's socket after every response and adds it
 * back for the next request, two epoll_ctl calls a request for nothing. A
 * removed socket that was only waiting for input is parked instead (still
 * registered, ignored); an event on a parked socket (the upstream closed
 * it) unregisters it. Upstream sockets are opened and closed through our
 * callbacks, which reset the state, so a new socket that gets a closed
 * one's number starts unregistered. */
enum { UPFD_IN = 1, UPFD_OUT = 2, UPFD_REG = 4, UPFD_PARKED = 8 };

static uint8_t *upfd_slot(worker *w, curl_socket_t s)
{
    if (s < 0)
        return NULL;
    if ((size_t)s >= w->n_upfd) {
        size_t n = w->n_upfd ? w->n_upfd : 256;
        while (n <= (size_t)s)
            n *= 2;
        uint8_t *p = tg_realloc(w->upfd, n);
        memset(p + w->n_upfd, 0, n - w->n_upfd);
        w->upfd = p;
        w->n_upfd = n;
    }
    return &w->upfd[s];
}

int on_curl_socket(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    worker *w = userp;
    (void)e;
    (void)socketp;
    uint8_t *st = upfd_slot(w, s);
    if (what == CURL_POLL_REMOVE) {
        if (st && (*st & (UPFD_REG | UPFD_OUT)) == UPFD_REG && (*st & UPFD_IN)) {
            *st |= UPFD_PARKED;
        } else {
            epoll_ctl(w->epfd, EPOLL_CTL_DEL, s, NULL);
            if (st)
                *st = 0;
        }
        return 0;
    }
    uint8_t want = (uint8_t)((what & CURL_POLL_IN ? UPFD_IN : 0) |
                             (what & CURL_POLL_OUT ? UPFD_OUT : 0));
    struct epoll_event ev = {
        .events = (uint32_t)((want & UPFD_IN ? EPOLLIN : 0) | (want & UPFD_OUT ? EPOLLOUT : 0)),
        .data.u64 = TAG(K_CURL, 0, s)};
    if (st && (*st & UPFD_REG)) {
        if ((*st & (UPFD_IN | UPFD_OUT)) != want && epoll_ctl(w->epfd, EPOLL_CTL_MOD, s, &ev) &&
            errno == ENOENT)
            epoll_ctl(w->epfd, EPOLL_CTL_ADD, s, &ev);
    } else if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, s, &ev) != 0 && errno == EEXIST) {
        epoll_ctl(w->epfd, EPOLL_CTL_MOD, s, &ev);
    }
    if (st)
        *st = (uint8_t)(UPFD_REG | want);
    return 0;
}

/* An event for a curl socket: curl's, unless the socket is parked. */
void on_curl_event(worker *w, curl_socket_t s, uint32_t events)
{
    uint8_t *st = (size_t)s < w->n_upfd ? &w->upfd[s] : NULL;
    if (st && (*st & UPFD_PARKED)) {
        epoll_ctl(w->epfd, EPOLL_CTL_DEL, s, NULL);
        *st = 0;
        return;
    }
    int running;
    int flags = (events & EPOLLIN ? CURL_CSELECT_IN : 0) | (events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                (events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
    curl_multi_socket_action(w->multi, s, flags, &running);
}

/* Every upstream socket is opened here, so a new socket never inherits the
 * state of a closed one that had the same number. */
curl_socket_t on_curl_open(void *userp, curlsocktype purpose, struct curl_sockaddr *a)
{
    worker *w = userp;
    (void)purpose;
    curl_socket_t s = socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
    if (s >= 0 && (size_t)s < w->n_upfd)
        w->upfd[s] = 0;
    return s < 0 ? CURL_SOCKET_BAD : s;
}

int on_curl_close(void *userp, curl_socket_t s)
{
    worker *w = userp;
    if ((size_t)s < w->n_upfd)
        w->upfd[s] = 0;  /* close() drops it from the epoll set */
    return close(s);
}

int on_curl_timer(CURLM *m, long timeout_ms, void *userp)
{
    worker *w = userp;
    (void)m;
    w->curl_deadline_ms = timeout_ms < 0 ? -1 : (long)(now_us() / 1000) + timeout_ms;
    return 0;
}
