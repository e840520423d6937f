/* wordvec_data.c -- discovery/wordvec.bin linked in as read-only data.
 *
 * The table is binary (int8 vectors), so it is taken in whole by the
 * assembler's .incbin rather than written out as C: the repository holds
 * its bytes once, and a build needs neither npm nor Python. The Makefile
 * makes this object depend on the file; its size is a symbol of its own
 * (two symbols' distance is no C). See wordvec.h. */
#include <stdint.h>

__asm__(".section .rodata\n"
        ".balign 16\n"
        ".globl tg_wordvec_bin\n"
        ".type tg_wordvec_bin, @object\n"
        "tg_wordvec_bin:\n"
        ".incbin \"discovery/wordvec.bin\"\n"
        "tg_wordvec_bin_end:\n"
        ".balign 8\n"
        ".globl tg_wordvec_bin_size\n"
        ".type tg_wordvec_bin_size, @object\n"
        "tg_wordvec_bin_size:\n"
        ".quad tg_wordvec_bin_end - tg_wordvec_bin\n"
        ".previous\n");
