/* front.h -- the front door (proxy/front.c): libmicrohttpd's callbacks for
 * a worker (cls: the worker), the sweep of slow request heads, and a
 * client that hung up while its request waited. Above proxy/upstream.h,
 * below proxy/server.c. */
#ifndef TG_FRONT_H
#define TG_FRONT_H

#include "proxy/request.h"

/* MHD's access handler, completion and connection notifications. */
enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                           const char *method, const char *version, const char *upload_data,
                           size_t *upload_data_size, void **con_cls);
void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                  enum MHD_RequestTerminationCode toe);
void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                   enum MHD_ConnectionNotificationCode toe);
/* Heads late past header_timeout at time t: their sockets are shut down. */
void sweep_heads(worker *w, uint64_t t);
/* Kept-alive connections parked between requests: after a run of MHD,
 * those it answered (conns_park); an event on a connection's socket
 * (K_CONN); those parked too long at time t, or all (t = UINT64_MAX). */
void conns_park(worker *w);
void conn_event(worker *w, uint64_t tag, uint32_t events);
void conns_unpark(worker *w, uint64_t t);
/* The client went away while we waited: cancel upstream now. */
void on_client_hangup(tg_req *r);

#endif
