/* quirk.h -- the provider response quirks of docs/dialects.md section 5
 * (R1..R29) as ids. The repair code notes each repair by its id, the
 * request's stats count by it, and /metrics names it (tg_quirk_name), so an
 * id that is not a quirk cannot be written, nor counted into another's slot.
 */
#ifndef TG_QUIRK_H
#define TG_QUIRK_H

#define TG_QUIRK_NUMBERS(X)                                                               \
    X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)      \
    X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29)

#define TG_QUIRK_ID(n) TG_R##n,
typedef enum tg_quirk {
    TG_Q_OTHER = 0, /* a repair no R-number names (json_fix, structured output) */
    TG_QUIRK_NUMBERS(TG_QUIRK_ID)
    TG_QUIRKS       /* how many ids, "other" included */
} tg_quirk;
#undef TG_QUIRK_ID

/* "R1".."R29", "other" for TG_Q_OTHER, or NULL for a value out of range. */
const char *tg_quirk_name(tg_quirk q);
/* The id of "R1".."R29" or "other", or -1. */
int tg_quirk_from_name(const char *name);

#endif
