/* fold.h -- an answer in the other mode than the agent asked for: a
 * stream folded into the whole answer it stands for, and how toolgate says
 * it changed the mode (fold.c). */
#ifndef TG_FOLD_H
#define TG_FOLD_H

#include "proxy/request.h"

/* The provider answered in the other mode than asked and toolgate gave the
 * agent the mode it asked for ("stream-folded", "whole-streamed"): said in
 * X-Toolgate-Translated, the translations metric and an info line. */
void tg_answer_mode_said(tg_req *r, const char *what);
/* A chat request asked whole whose provider streamed (told by the
 * Content-Type or a body opening with "data:"/"event:"): r->up.resp becomes
 * the chat.completion the chunks make, or is left as it came when no chunk
 * was a chat chunk. */
void tg_fold_chat_stream(tg_req *r);
/* The same for a passed-through Responses or Messages request asked whole:
 * the Response or Message, or the stream's error event with status 502. */
void tg_fold_api_stream(tg_req *r);

#endif
