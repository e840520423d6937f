/* server.h -- the network side: N worker threads, each one event loop that
 * owns a libmicrohttpd daemon (front end) and a libcurl multi handle
 * (upstream). See server.c for the design. */
#ifndef TG_SERVER_H
#define TG_SERVER_H

#include "conf/conf.h"

/* Runs until SIGTERM/SIGINT (graceful) and reloads on SIGHUP. Takes a
 * reference on conf. listen_override may be NULL. Returns the exit code. */
int tg_server_run(tg_conf *conf, const char *conf_path, const char *listen_override);

#endif
