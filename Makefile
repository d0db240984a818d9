# queryclaw_ext: PGXS build, plus the project's two commands (make test, make demo).
#
# The test and demo targets install whatever Debian packages are missing before
# building, so they must work even when the PostgreSQL server headers (and so
# PGXS itself) are not installed yet.

EXTENSION = queryclaw_ext
MODULE_big = queryclaw_ext
OBJS = \
	src/queryclaw.o \
	src/guc.o \
	src/netaddr.o \
	src/hostname.o \
	src/rules.o \
	src/policy.o \
	src/redact.o \
	src/call.o \
	src/http.o \
	src/charset.o \
	src/html.o \
	src/content.o \
	src/text.o \
	src/article.o \
	src/markdown.o \
	src/metadata.o \
	src/json.o \
	src/response.o \
	src/audit.o \
	src/auditq.o \
	src/worker.o \
	src/bgsession.o \
	src/rolecount.o \
	src/ratelimit.o \
	src/budget.o \
	src/fetch.o \
	src/api.o \
	src/batch.o \
	src/check.o \
	src/resolve.o \
	src/chat.o \
	src/tools.o \
	src/search.o \
	src/retry.o \
	src/endpoint.o \
	src/schema.o \
	src/sqltool.o \
	src/embed.o \
	src/llm.o
DATA = sql/queryclaw_ext--0.1.sql sql/queryclaw_ext--0.1--0.2.sql
PGFILEDESC = "queryclaw_ext - policy-checked, audited HTTP from SQL"

DEPS_PKGS = libcurl libcjson libxml-2.0 libidn2
PG_CPPFLAGS = $(shell pkg-config --cflags $(DEPS_PKGS) 2>/dev/null)
# -Wextra, except for unused parameters: PostgreSQL's own headers (ilist.h,
# bufpage.h) and every callback signature have them.
PG_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare
# Rebuild objects (and their JIT bitcode) when a header they include changes.
PG_CFLAGS += -MMD -MP
SHLIB_LINK = $(shell pkg-config --libs $(DEPS_PKGS) 2>/dev/null)

# Debian installs one pg_config per major version; this project targets 15.
PG_CONFIG ?= $(firstword $(wildcard /usr/lib/postgresql/15/bin/pg_config) pg_config)
PGXS := $(wildcard $(shell $(PG_CONFIG) --pgxs 2>/dev/null))
ifneq ($(PGXS),)
include $(PGXS)
else
all:
	@echo "PostgreSQL server headers not found: run 'make test' or 'make demo', which install them"
	@exit 1
endif

-include $(OBJS:.o=.d)
$(OBJS:.o=.bc): %.bc: %.o
EXTRA_CLEAN = $(OBJS:.o=.d) test/unit/test_rules test/unit/test_retry

.PHONY: test demo deps bench bench-content
deps:
	bash test/deps.sh
test:
	bash test/run.sh
demo:
	bash test/demo.sh
bench:
	bash test/bench/throughput.sh
# Quality and speed of text, article and markdown on a corpus of real pages
# with ground truth (see test/bench/content.sh): make bench-content CORPUS=dir
bench-content:
	bash test/bench/content.sh "$(CORPUS)"

# Proof under fire, too slow for make test: libFuzzer targets (built with
# clang; `make fuzz-run FUZZ_SECONDS=600` runs each for that long), the
# regression suite under valgrind, and the memory and load benchmarks.
FUZZ_SECONDS ?= 60
.PHONY: fuzz fuzz-run valgrind bench-memory bench-load
fuzz:
	bash test/fuzz/build.sh
fuzz-run: fuzz
	bash test/fuzz/run.sh $(FUZZ_SECONDS)
valgrind:
	bash test/valgrind/run.sh
bench-memory:
	bash test/bench/memory.sh
bench-load:
	bash test/bench/load.sh

# The pure C policy code, tested without a server.
UNIT_SRCS = test/unit/test_rules.c src/netaddr.c src/hostname.c src/rules.c
test/unit/test_rules: $(UNIT_SRCS) src/netaddr.h src/hostname.h src/rules.h
	$(CC) -std=c99 -D_DEFAULT_SOURCE -Wall -Wextra -Werror -Isrc -o $@ $(UNIT_SRCS) \
		$(shell pkg-config --cflags --libs libidn2)
RETRY_SRCS = test/unit/test_retry.c src/retry.c
test/unit/test_retry: $(RETRY_SRCS) src/retry.h
	$(CC) -std=c99 -D_DEFAULT_SOURCE -Wall -Wextra -Werror -Isrc -o $@ $(RETRY_SRCS) $(shell pkg-config --libs libcurl)
.PHONY: unit-tests
unit-tests: test/unit/test_rules test/unit/test_retry
	./test/unit/test_rules
	./test/unit/test_retry
