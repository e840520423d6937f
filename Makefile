# toolgate -- top-level build. `make` builds build/toolgate; `make run` and
# `make test` first install whatever Debian packages are missing (.ci/deps.sh).
#
# Every .c under core/, sanitize/, discovery/, repair/, bridge/, pipeline/,
# conf/ and proxy/ (but proxy/main.c)
# goes into build/libtoolgate.a, which the binary, the unit tests and the
# fuzzers link, so a new source file needs no Makefile change.

BUILD    ?= build
CC       ?= cc
SAN      ?=
PKGS     := libmicrohttpd libcurl jansson inih hiredis libssl libcrypto poppler-glib zlib libzstd
# poppler-glib's headers (glib, cairo) only for the one file that reads PDFs,
# as system headers: their own warnings are not ours
PDF_CFLAGS := $(patsubst -I%,-isystem %,$(shell pkg-config --cflags poppler-glib 2>/dev/null))
# OPT and SAN select the build (the ASan and fuzz builds set them); CFLAGS
# from the command line is added last, so it can never drop the warnings.
OPT      ?= -O2 -g
TG_CFLAGS = -std=c11 -D_GNU_SOURCE -I. -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter \
            -fno-strict-aliasing $(OPT) $(SAN) $(CFLAGS)
LDLIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lmicrohttpd -lcurl -ljansson -linih -lhiredis -lssl -lcrypto -lpoppler-glib -lgobject-2.0 -lglib-2.0 -lz -lzstd) -lstemmer -lpthread -lm
LDFLAGS  += $(SAN)

SRCDIRS  := core sanitize discovery repair bridge pipeline conf proxy
LIB_SRC  := $(filter-out proxy/main.c,$(wildcard $(SRCDIRS:%=%/*.c)))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
HDRS     := $(wildcard $(SRCDIRS:%=%/*.h))
UNIT_SRC := $(wildcard test/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:test/unit/%.c=$(BUILD)/test/%)
TOOL_SRC := $(wildcard test/tools/*.c)
TOOL_BIN := $(TOOL_SRC:test/tools/%.c=$(BUILD)/test/%)

PREFIX   ?= /usr/local
DESTDIR  ?=
CONF     ?= conf/toolgate.conf

.PHONY: all deps run test test-agents unit clean install bench eval fuzz soak
all: $(BUILD)/toolgate

$(BUILD)/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(TG_CFLAGS) -c $< -o $@

$(BUILD)/bridge/pdftext.o: TG_CFLAGS += $(PDF_CFLAGS)

# the word vectors are linked in by .incbin (discovery/wordvec_data.c)
$(BUILD)/discovery/wordvec_data.o: discovery/wordvec.bin

$(BUILD)/libtoolgate.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/toolgate: $(BUILD)/proxy/main.o $(BUILD)/libtoolgate.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/test/%: test/unit/%.c $(wildcard test/unit/*.h test/unit/referee.c test/mock/hash_embed.h test/mock/mock_strict.c) $(BUILD)/libtoolgate.a $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(TG_CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libtoolgate.a $(LDLIBS) -lcmocka

$(BUILD)/test/%: test/tools/%.c $(BUILD)/libtoolgate.a $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(TG_CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libtoolgate.a $(LDLIBS)

# one translation unit: mock_upstream.c includes mock_answers.c, mock_script.c
# and (through mock_answers.c) mock_strict.c
$(BUILD)/mock-upstream: test/mock/mock_upstream.c test/mock/mock_answers.c test/mock/mock_script.c \
                        test/mock/mock_strict.c test/mock/hash_embed.h $(BUILD)/libtoolgate.a
	$(CC) $(TG_CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libtoolgate.a $(LDLIBS)

unit: $(UNIT_BIN) $(TOOL_BIN)

deps:
	@sh .ci/deps.sh

run: deps
	@$(MAKE) --no-print-directory all
	./$(BUILD)/toolgate serve -c $(CONF)

# The first minute without a key: toolgate before the project's mock in a
# Gemini-like personality, one agent request shown on its way up and down
# with each change's rule, then left running until Ctrl-C (deploy/demo.sh).
.PHONY: demo
demo: deps
	@$(MAKE) --no-print-directory all $(BUILD)/mock-upstream
	@BUILD=$(BUILD) sh deploy/demo.sh

# The whole suite: the normal build (which `make install` uses), then every
# unit test, vector and integration test against the ASan/UBSan build.
ASAN := BUILD=build-asan SAN="-fsanitize=address,undefined -fno-omit-frame-pointer" OPT="-O1 -g"
test: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory $(ASAN) build-asan/toolgate build-asan/mock-upstream unit
	@BUILD=build-asan sh test/run.sh

# The agent suite's whole matrix: every agent and flow on every route
# (make test runs the agents and flows added in issue 26 on two routes;
# docs/testing.md).
test-agents: deps
	@$(MAKE) --no-print-directory $(ASAN) build-asan/toolgate build-asan/mock-upstream
	@TG_AGENT_MATRIX=full TG_SUITE_TIMEOUT=3600 BUILD=build-asan sh test/run.sh agents

bench: deps
	@$(MAKE) --no-print-directory all $(BUILD)/mock-upstream
	@sh bench/run.sh

# Discovery quality: recall of search_tools per half of the query set at
# 100, 400 and 1,000 tools, end to end and with successor hints
# (test/tools/discovery_eval.c; TG_SHARED as bench), then real agents
# with a 400-tool MCP catalog on EVAL_AGENT_QUERIES queries
# (test/integration/agent_catalog.sh: opencode, and Claude Code with its
# MCP tools deferred, sent whole, and searched with its own ToolSearch;
# make test runs 6 with opencode and 2 with Claude Code, deferred).
EVAL_AGENT_QUERIES ?= 30
EVAL_AGENTS ?= opencode claude claude_all claude_search
eval: deps
	@$(MAKE) --no-print-directory $(BUILD)/test/discovery_eval $(BUILD)/toolgate $(BUILD)/mock-upstream
	@./$(BUILD)/test/discovery_eval -r -e
	@for a in $(EVAL_AGENTS); do \
		TG_CATALOG_AGENT=$$a TG_AGENT_QUERIES=$(EVAL_AGENT_QUERIES) TG_AGENT_TIMEOUT=180 \
		TG_BIN=$(CURDIR)/$(BUILD)/toolgate TG_MOCK=$(CURDIR)/$(BUILD)/mock-upstream \
		sh test/integration/agent_catalog.sh | grep '^#'; done

# Fuzzing (libFuzzer, clang from Debian): every test/fuzz/fuzz_*.c target
# runs FUZZ_SECONDS on top of its checked-in seeds; a crash fails the run and
# its input is kept in build-fuzz/ to become a regression vector.
FUZZ_SECONDS ?= 60
FUZZ_SRC := $(wildcard test/fuzz/fuzz_*.c)
FUZZ_BIN := $(FUZZ_SRC:test/fuzz/%.c=build-fuzz/%)
FUZZ_SAN := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer

build-fuzz/fuzz_%: test/fuzz/fuzz_%.c build-fuzz/libtoolgate.a
	clang -I. -O1 -g -fsanitize=fuzzer,address,undefined -o $@ $< build-fuzz/libtoolgate.a $(LDLIBS)

fuzz: deps
	@$(MAKE) --no-print-directory BUILD=build-fuzz CC=clang SAN="$(FUZZ_SAN)" OPT="-O1 -g" build-fuzz/libtoolgate.a
	@$(MAKE) --no-print-directory $(FUZZ_BIN)
	@sh test/fuzz/run.sh $(FUZZ_SECONDS)

# The soak: SOAK_REQUESTS mixed requests through the ASan build (see test/soak/run.sh).
SOAK_REQUESTS ?= 200000
soak: deps
	@$(MAKE) --no-print-directory $(ASAN) build-asan/toolgate build-asan/mock-upstream
	@sh test/soak/run.sh $(SOAK_REQUESTS)

install: $(BUILD)/toolgate
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)/etc/toolgate $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 $(BUILD)/toolgate $(DESTDIR)$(PREFIX)/bin/toolgate
	install -m 0644 conf/toolgate.conf $(DESTDIR)/etc/toolgate/toolgate.conf
	install -m 0644 docs/toolgate.1 $(DESTDIR)$(PREFIX)/share/man/man1/toolgate.1

clean:
	rm -rf build build-asan build-fuzz
