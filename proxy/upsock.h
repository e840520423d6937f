/* upsock.h -- the upstream's sockets in the worker's epoll set
 * (proxy/upsock.c): curl's socket, timer, open and close callbacks, and
 * the loop's hand-off of an event on one of them. */
#ifndef TG_UPSOCK_H
#define TG_UPSOCK_H

#include "proxy/worker.h"

/* CURLMOPT_SOCKETFUNCTION and CURLMOPT_TIMERFUNCTION (userp: the worker). */
int on_curl_socket(CURL *e, curl_socket_t s, int what, void *userp, void *socketp);
int on_curl_timer(CURLM *m, long timeout_ms, void *userp);
/* CURLOPT_OPENSOCKETFUNCTION and CURLOPT_CLOSESOCKETFUNCTION (userp: the worker). */
curl_socket_t on_curl_open(void *userp, curlsocktype purpose, struct curl_sockaddr *a);
int on_curl_close(void *userp, curl_socket_t s);
/* An epoll event for curl socket s. */
void on_curl_event(worker *w, curl_socket_t s, uint32_t events);

#endif
