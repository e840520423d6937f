/* disc_conf.h -- a route's discovery settings (conf keys discovery*,
 * docs/configuration.md). Apart from discovery.h so that the files below
 * the stage (catalog.c, answer.c) read them without including the stage
 * that calls them. */
#ifndef TG_DISC_CONF_H
#define TG_DISC_CONF_H

typedef enum { TG_DISC_OFF = 0, TG_DISC_AUTO, TG_DISC_ON } tg_disc_mode;

typedef struct tg_disc_conf {
    tg_disc_mode mode;
    int threshold;        /* auto: collapse above this many tools */
    char **core;          /* NULL-terminated globs always exposed (owned by conf) */
    int search_schemas;   /* top results that carry full schemas */
    int max_rounds;       /* inner rounds answered by toolgate */
    int list_names;       /* list catalog names in search_tools' description */
    char *embed_route;    /* discovery_embeddings = ROUTE:MODEL, or NULL (owned by conf;
                             discovery/embed.h) */
    char *embed_model;
    int hints;            /* successor hints beside hidden tools' results (hints.h) */
    int wordvec;          /* search_tools also ranks by the built-in word vectors (wordvec.h) */
} tg_disc_conf;

#endif
