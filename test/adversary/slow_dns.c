/* slow_dns.c -- a name lookup that hangs, for store.sh (issue 28): preloaded
 * into toolgate, getaddrinfo of the host $TG_SLOW_DNS_HOST touches
 * $TG_SLOW_DNS_MARK and then waits until the file $TG_SLOW_DNS_GATE exists,
 * as a lookup to a DNS server that does not answer would, and answers
 * 127.0.0.1; every other lookup is libc's. A test seam, not toolgate code. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*gai_fn)(const char *, const char *, const struct addrinfo *, struct addrinfo **);

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res)
{
    gai_fn real = (gai_fn)dlsym(RTLD_NEXT, "getaddrinfo");
    const char *host = getenv("TG_SLOW_DNS_HOST"), *gate = getenv("TG_SLOW_DNS_GATE");
    const char *mark = getenv("TG_SLOW_DNS_MARK");
    if (node && host && gate && !strcmp(node, host)) {
        FILE *f = mark ? fopen(mark, "a") : NULL;
        if (f) {
            fputs("lookup\n", f);
            fclose(f);
        }
        while (access(gate, F_OK) != 0)
            usleep(20000);
        node = "127.0.0.1";
    }
    return real(node, service, hints, res);
}
