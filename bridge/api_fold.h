/* api_fold.h -- a Responses or Messages event stream folded into the whole
 * answer it stands for (api_fold.c), for a route that passes the API
 * through to a provider that streams what was asked for whole.
 *
 * Ownership: the fold owns what it keeps; tg_api_fold_end hands the caller
 * a new reference and frees the fold.
 */
#ifndef TG_API_FOLD_H
#define TG_API_FOLD_H

#include <stddef.h>

#include <jansson.h>

typedef struct tg_api_fold tg_api_fold;

tg_api_fold *tg_api_fold_new(void);
/* The data of one event (its "type" says which API; the SSE event name is
 * not needed). */
void tg_api_fold_event(tg_api_fold *f, const char *data, size_t len);
/* The Response or the Message the events make; the API's own error body
 * when the stream carried an error event (*failed set); NULL when they
 * were neither API's. Frees f. */
json_t *tg_api_fold_end(tg_api_fold *f, int *failed);

#endif
