# queryclaw_ext: PGXS build, plus the project's two commands (make test, make demo).
#
# The test and demo targets install whatever Debian packages are missing before
# building, so they must work even when the PostgreSQL server headers (and so
# PGXS itself) are not installed yet.

EXTENSION = queryclaw_ext
MODULE_big = queryclaw_ext
OBJS = \
	src/queryclaw.o \
	src/common/guc.o \
	src/common/netaddr.o \
	src/common/hostname.o \
	src/common/rules.o \
	src/policy/policy.o \
	src/common/redact.o \
	src/common/redactforms.o \
	src/call/call.o \
	src/call/onerror.o \
	src/policy/callrec.o \
	src/transport/http.o \
	src/common/charset.o \
	src/content/html.o \
	src/content/content.o \
	src/content/text.o \
	src/content/article.o \
	src/content/markdown.o \
	src/content/metadata.o \
	src/common/json.o \
	src/call/response.o \
	src/call/audit.o \
	src/call/auditq.o \
	src/workers/worker.o \
	src/workers/bgsession.o \
	src/call/rolecount.o \
	src/call/ratelimit.o \
	src/call/budget.o \
	src/functions/fetch.o \
	src/requests/api.o \
	src/functions/batch.o \
	src/requests/check.o \
	src/transport/resolve.o \
	src/transport/events.o \
	src/requests/chat.o \
	src/requests/tools.o \
	src/requests/search.o \
	src/common/retry.o \
	src/common/bucket.o \
	src/call/hostrate.o \
	src/workers/asyncrun.o \
	src/workers/handoff.o \
	src/workers/asyncworker.o \
	src/workers/callbackworker.o \
	src/workers/enrichfeed.o \
	src/requests/endpoint.o \
	src/common/schema.o \
	src/common/sqlcheck.o \
	src/requests/sqltool.o \
	src/requests/embedreq.o \
	src/functions/embed.o \
	src/functions/llm.o \
	src/requests/llmjob.o \
	src/common/subxact.o \
	src/workers/rolesession.o \
	src/common/proclookup.o \
	src/queue/queue.o \
	src/queue/callbackhints.o \
	src/queue/enqueue.o \
	src/queue/qinsert.o \
	src/queue/qwait.o \
	src/queue/qretry.o \
	src/queue/enrichdef.o \
	src/queue/enrichcitus.o \
	src/queue/hostlimits.o \
	src/common/cluster.o \
	src/common/clustergrant.o \
	src/common/clusterjoin.o \
	src/common/latchwait.o \
	src/policy/serversopts.o \
	src/functions/serversfdw.o \
	src/common/urlpath.o \
	src/policy/servers.o \
	src/call/serversadmit.o \
	src/requests/mcp.o \
	src/requests/mcptools.o \
	src/functions/mcpfns.o \
	src/common/compat.o
DATA = sql/queryclaw_ext--0.1.sql sql/queryclaw_ext--0.1--0.2.sql \
	sql/queryclaw_ext--0.2--0.3.sql
PGFILEDESC = "queryclaw_ext - policy-checked, audited HTTP from SQL"

DEPS_PKGS = libcurl libcjson libxml-2.0 libidn2
# src/ is grouped by subsystem (docs/architecture.md); every folder's
# headers are found by name
QC_FOLDERS = common content policy transport call requests functions queue workers
QC_INCLUDES := $(addprefix -I$(dir $(lastword $(MAKEFILE_LIST)))src/,$(QC_FOLDERS))
PG_CPPFLAGS = $(QC_INCLUDES) $(shell pkg-config --cflags $(DEPS_PKGS) 2>/dev/null)
# The version the module reports (PG_MODULE_MAGIC_EXT, 18 and newer).
QC_VERSION := $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(dir $(lastword $(MAKEFILE_LIST)))queryclaw_ext.control)
PG_CPPFLAGS += -DQC_VERSION='"$(QC_VERSION)"'
# The oldest libcurl with everything the code uses (CURLOPT_QUICK_EXIT).
QC_CURL_MIN = 7.87.0
ifneq ($(filter-out test test-llm-server demo deps deb clean distclean,$(or $(MAKECMDGOALS),all)),)
ifeq ($(shell pkg-config --atleast-version=$(QC_CURL_MIN) libcurl 2>/dev/null && echo ok),)
QC_CURL_FOUND := $(or $(shell pkg-config --modversion libcurl 2>/dev/null),none)
$(error queryclaw_ext needs libcurl $(QC_CURL_MIN) or newer, found $(QC_CURL_FOUND): install libcurl4-openssl-dev (Debian 12 or newer has it))
endif
endif
# -Wextra, except for unused parameters: PostgreSQL's own headers (ilist.h,
# bufpage.h) and every callback signature have them.
PG_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare
# Rebuild objects (and their JIT bitcode) when a header they include changes.
PG_CFLAGS += -MMD -MP
SHLIB_LINK = $(shell pkg-config --libs $(DEPS_PKGS) 2>/dev/null)

# make installcheck (PGXS, against the server PGHOST/PGPORT name, as a
# superuser, with the extension's files installed): every test of sql/ that
# needs only that server, no fixture servers, no preload and no network
# (docs/testing.md says why each other one needs make test).  001_setup
# creates the extension and the test helpers, as it does for make test;
# the library is loaded into each session so that its settings exist.
REGRESS = 001_setup 002_policy_precheck 008_privileges_policy 010_settings \
	014_fuzz_findings_server 024_sql_query_guard 030_content 041_secret_settings \
	050_server_only 080_endpoints_validator
REGRESS_OPTS = $(if $(REGRESS_OUTPUTDIR),--outputdir=$(REGRESS_OUTPUTDIR))
ENCODING = UTF8
NO_LOCALE = 1
installcheck: export PGOPTIONS += -c session_preload_libraries=queryclaw_ext

# Debian installs one pg_config per major version: PG=17 picks 17's, else
# the newest installed; elsewhere the pg_config on PATH.
PG_CONFIG ?= $(firstword $(wildcard /usr/lib/postgresql/$(PG)/bin/pg_config) \
	$(lastword $(sort $(wildcard /usr/lib/postgresql/*/bin/pg_config))) pg_config)
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
EXTRA_CLEAN = $(OBJS:.o=.d) test/unit/test_rules test/unit/test_retry test/unit/test_hostrate test/unit/test_urlpath

.PHONY: test test-citus test-llm-server demo deps bench bench-content bench-plans deb
deps:
	bash test/deps.sh
# make test: this machine's PostgreSQL; make test PG=17 (or 18): that major,
# from the Debian release that ships it (test/pgroot.sh).
test:
	PG=$(PG) bash test/run.sh
# On a Citus cluster (a coordinator and two workers) built from the Citus
# source beside this tree (test/citus/run.sh); PG=17 for that major.
test-citus:
	PG=$(PG) bash test/citus/run.sh
# The LLM loop against a real model server: llama.cpp's llama-server from
# Debian unstable, with a tiny generated model (test/llama/run.sh; run once
# by .ci/run, not by make test).
test-llm-server:
	bash test/llama/run.sh
demo:
	bash test/demo.sh
# Debian packages for each tested major (PG=17: that one) in deb/
deb:
	PG=$(PG) bash test/deb.sh
bench:
	bash test/bench/throughput.sh
	bash test/bench/async.sh
	bash test/bench/enqueue.sh
	bash test/bench/enrich.sh
# Quality and speed of text, article and markdown on a corpus of real pages
# with ground truth (see test/bench/content.sh): make bench-content CORPUS=dir
bench-content:
	bash test/bench/content.sh "$(CORPUS)"
# The plans the queue's workers run on a million finished requests
# (test/bench/queue_plans.sh; docs/performance.md).
bench-plans:
	bash test/bench/queue_plans.sh

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
UNIT_SRCS = test/unit/test_rules.c src/common/netaddr.c src/common/hostname.c src/common/rules.c
test/unit/test_rules: $(UNIT_SRCS) src/common/netaddr.h src/common/hostname.h src/common/rules.h
	$(CC) -std=c99 -D_DEFAULT_SOURCE -Wall -Wextra -Werror $(QC_INCLUDES) -o $@ $(UNIT_SRCS) \
		$(shell pkg-config --cflags --libs libidn2)
RETRY_SRCS = test/unit/test_retry.c src/common/retry.c
test/unit/test_retry: $(RETRY_SRCS) src/common/retry.h test/unit/check.h
	$(CC) -std=c99 -D_DEFAULT_SOURCE -Wall -Wextra -Werror $(QC_INCLUDES) -o $@ $(RETRY_SRCS) $(shell pkg-config --libs libcurl)
HOSTRATE_SRCS = test/unit/test_hostrate.c src/common/bucket.c src/common/netaddr.c src/common/hostname.c src/common/rules.c
test/unit/test_hostrate: $(HOSTRATE_SRCS) test/unit/check.h src/common/bucket.h src/common/rules.h src/common/hostname.h src/common/netaddr.h
	$(CC) -std=c99 -D_DEFAULT_SOURCE -Wall -Wextra -Werror $(QC_INCLUDES) -o $@ $(HOSTRATE_SRCS) \
		$(shell pkg-config --cflags --libs libidn2)
URLPATH_SRCS = test/unit/test_urlpath.c src/common/urlpath.c
test/unit/test_urlpath: $(URLPATH_SRCS) src/common/urlpath.h test/unit/check.h
	$(CC) -std=c99 -D_DEFAULT_SOURCE -Wall -Wextra -Werror $(QC_INCLUDES) -o $@ $(URLPATH_SRCS)
.PHONY: unit-tests
unit-tests: test/unit/test_rules test/unit/test_retry test/unit/test_hostrate test/unit/test_urlpath
	./test/unit/test_rules
	./test/unit/test_retry
	./test/unit/test_hostrate
	./test/unit/test_urlpath
