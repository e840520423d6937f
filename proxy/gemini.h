/* gemini.h -- the endpoints of Gemini's API that are not a generation
 * (proxy/gemini.c): the model list, a model, countTokens, and any other
 * method. Above proxy/prepare.h, below proxy/front.h. */
#ifndef TG_GEMINI_SIDE_H
#define TG_GEMINI_SIDE_H

#include <stdbool.h>

#include "proxy/request.h"

/* A request of Gemini's API that is no generateContent or
 * streamGenerateContent: true when it was handled, *rc then 0 (passed to
 * Gemini: r->route set, the body ready) or -1 (answered here: the answer
 * in r). False for every other request, which goes its usual way. */
bool gemini_side(tg_req *r, const tg_route *by_prefix, int *rc);

#endif
