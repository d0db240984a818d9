/*-------------------------------------------------------------------------
 *
 * shim.c
 *	  The few parts of a PostgreSQL backend that the fuzzed sources need,
 *	  so that they run in a plain process under libFuzzer.
 *
 * The sources are compiled against the server headers, as in the
 * extension, and linked with Debian's frontend libpgcommon.a and
 * libpgport.a (StringInfo, psprintf, the UTF-8 verifier, string helpers).
 * What those libraries do not have, or have only in a frontend form that
 * would hide bugs, is here:
 *
 * - Memory: palloc() & co. malloc each chunk on its own, so AddressSanitizer
 *   sees every overrun of a palloc'd buffer, and keep a list of the chunks,
 *   which qc_fuzz_reset() frees after each input as a memory context reset
 *   would.  A chunk allocated while TopMemoryContext is current (the
 *   caches a backend keeps from one statement to the next) stays off that
 *   list and lives until it is pfree'd, so a cache that outlives its input
 *   is fuzzed as it runs in the backend.  A request above MaxAllocSize is an
 *   ERROR, as in the backend.
 * - Errors: ereport(ERROR) and elog(ERROR) print the message and abort().
 *   The fuzzed functions must not raise an error on any input, however
 *   bad, so an ERROR is a finding.  Lower levels are ignored.
 * - Interrupts: never pending.
 * - Encoding: the database encoding is UTF8, the encoding of every
 *   database the tests create, so the conversion lookups are never reached.
 *
 * Only what the link asks for is here; a new target that needs more adds it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <stdio.h>
#include <stdlib.h>

#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/formatting.h"
#include "utils/json.h"
#include "utils/memutils.h"

#include "shim.h"

/*
 * Backend globals the headers' macros refer to.  TopMemoryContext only has
 * to be a pointer of its own that palloc() can tell from the current
 * context's; nothing reads what it points to.
 */
static char top_context;
MemoryContext TopMemoryContext = (MemoryContext) &top_context;
MemoryContext CurrentMemoryContext = NULL;
sigjmp_buf *PG_exception_stack = NULL;
ErrorContextCallback *error_context_stack = NULL;
volatile sig_atomic_t InterruptPending = false;


/*
 * Memory: every chunk is a malloc'd block behind a header that links it
 * into the list of live chunks.
 */
typedef struct Chunk
{
	struct Chunk *prev;
	struct Chunk *next;
	size_t		size;
	bool		kept;			/* allocated in TopMemoryContext: not in live */
	/* keep the user's pointer MAXALIGNed */
	char		pad[MAXIMUM_ALIGNOF] pg_attribute_aligned(MAXIMUM_ALIGNOF);
} Chunk;

#define CHUNK_HEADER offsetof(Chunk, pad)
StaticAssertDecl(CHUNK_HEADER % MAXIMUM_ALIGNOF == 0, "chunk header alignment");

static Chunk *live = NULL;

static void
shim_error(const char *what, size_t size)
{
	fprintf(stderr, "shim: ERROR: %s (%zu bytes)\n", what, size);
	abort();
}

/* Record a new chunk: in the list of live ones unless kept. */
static void *
link_chunk(Chunk *c, size_t size, bool kept)
{
	if (c == NULL)
		shim_error("out of memory", size);
	c->size = size;
	c->kept = kept;
	c->prev = NULL;
	if (c->kept)
	{
		c->next = NULL;
		return (char *) c + CHUNK_HEADER;
	}
	c->next = live;
	if (live != NULL)
		live->prev = c;
	live = c;
	return (char *) c + CHUNK_HEADER;
}

static void
unlink_chunk(Chunk *c)
{
	if (c->kept)
		return;
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		live = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
}

void *
palloc(Size size)
{
	if (!AllocSizeIsValid(size))
		shim_error("invalid memory alloc request size", size);
	return link_chunk(malloc(CHUNK_HEADER + size), size,
					  CurrentMemoryContext == TopMemoryContext);
}

void *
palloc0(Size size)
{
	void	   *p = palloc(size);

	memset(p, 0, size);
	return p;
}


void
pfree(void *pointer)
{
	Chunk	   *c = (Chunk *) ((char *) pointer - CHUNK_HEADER);

	unlink_chunk(c);
	free(c);
}

void *
repalloc(void *pointer, Size size)
{
	Chunk	   *c = (Chunk *) ((char *) pointer - CHUNK_HEADER);
	bool		kept = c->kept;	/* a chunk stays in its context */

	if (!AllocSizeIsValid(size))
		shim_error("invalid memory alloc request size", size);
	unlink_chunk(c);
	return link_chunk(realloc(c, CHUNK_HEADER + size), size, kept);
}


void *
MemoryContextAllocHuge(MemoryContext context, Size size)
{
	if (!AllocHugeSizeIsValid(size))
		shim_error("invalid memory alloc request size", size);
	return link_chunk(malloc(CHUNK_HEADER + size), size, context == TopMemoryContext);
}

char *
pstrdup(const char *in)
{
	return pnstrdup(in, strlen(in));
}

char *
pnstrdup(const char *in, Size len)
{
	char	   *out;

	len = strnlen(in, len);
	out = palloc(len + 1);
	memcpy(out, in, len);
	out[len] = '\0';
	return out;
}

void
qc_fuzz_reset(void)
{
	while (live != NULL)
	{
		Chunk	   *c = live;

		live = c->next;
		free(c);
	}
}

char *
qc_fuzz_cstring(const uint8_t *data, size_t size)
{
	char	   *s = palloc(size + 1);

	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}


/*
 * Errors: collect the message of the report being built, and abort at
 * errfinish().  Only reports of level ERROR and above are ever built here:
 * the sources raise nothing else.
 */
static char report_message[1024];

bool
errstart_cold(int elevel, const char *domain)
{
	report_message[0] = '\0';
	return elevel >= ERROR;
}

int
errmsg_internal(const char *fmt,...)
{
	va_list		args;

	va_start(args, fmt);
	vsnprintf(report_message, sizeof(report_message), fmt, args);
	va_end(args);
	return 0;
}

void
errfinish(const char *filename, int lineno, const char *funcname)
{
	fprintf(stderr, "shim: ERROR raised at %s:%d (%s): %s\n",
			filename, lineno, funcname ? funcname : "?", report_message);
	abort();
}

void
pg_re_throw(void)
{
	fprintf(stderr, "shim: an ERROR was re-thrown\n");
	abort();
}

void
ProcessInterrupts(void)
{
	InterruptPending = false;
}


/*
 * Encoding: the database is UTF8.  The server-side conversion machinery
 * (pg_conversion lookups) is never reached in a UTF8 database.
 */
int
GetDatabaseEncoding(void)
{
	return PG_UTF8;
}


int
pg_mbstrlen(const char *mbstr)
{
	int			len = 0;

	while (*mbstr != '\0')
	{
		mbstr += pg_utf_mblen((const unsigned char *) mbstr);
		len++;
	}
	return len;
}

/* The byte length of the first limit characters of mbstr (len bytes). */
int
pg_mbcharcliplen(const char *mbstr, int len, int limit)
{
	int			clen = 0;

	for (int nch = 0; nch < limit && clen < len && mbstr[clen] != '\0'; nch++)
		clen += pg_utf_mblen((const unsigned char *) mbstr + clen);
	return clen;
}


/* The byte length of the longest prefix of mbstr within limit bytes. */
int
pg_encoding_mbcliplen(int encoding, const char *mbstr, int len, int limit)
{
	int			clen = 0;

	while (clen < len && mbstr[clen] != '\0')
	{
		int			l = pg_utf_mblen((const unsigned char *) mbstr + clen);

		if (clen + l > limit)
			break;
		clen += l;
	}
	return clen;
}

Oid
FindDefaultConversionProc(int32 for_encoding, int32 to_encoding)
{
	shim_error("conversion lookup in a UTF8 database", 0);
	return InvalidOid;
}

int
pg_do_encoding_conversion_buf(Oid proc, int src_encoding, int dest_encoding,
							  unsigned char *src, int srclen,
							  unsigned char *dest, int destlen, bool noError)
{
	shim_error("conversion in a UTF8 database", srclen);
	return 0;
}

/* As the backend's, on libpgcommon's verifier. */
bool
pg_verify_mbstr(int encoding, const char *mbstr, int len, bool noError)
{
	if (pg_encoding_verifymbstr(encoding, mbstr, len) == len)
		return true;
	if (!noError)
		shim_error("invalid byte sequence", len);
	return false;
}

/* As the backend's, for the ASCII letters: a palloc'd lower-case copy. */
char *
asc_tolower(const char *buff, size_t nbytes)
{
	char	   *result = pnstrdup(buff, nbytes);

	for (char *p = result; *p != '\0'; p++)
		*p = pg_ascii_tolower((unsigned char) *p);
	return result;
}



/*
 * Lists: the functions the sources call, on PostgreSQL 15's layout (a
 * header and an array of cells, read by the macros of nodes/pg_list.h).
 */
List *
list_make1_impl(NodeTag t, ListCell datum1)
{
	List	   *list = palloc(offsetof(List, initial_elements));

	list->type = t;
	list->length = 1;
	list->max_length = 4;
	list->elements = palloc(list->max_length * sizeof(ListCell));
	list->elements[0] = datum1;
	return list;
}

List *
lappend(List *list, void *datum)
{
	if (list == NIL)
		return list_make1_impl(T_List, list_make_ptr_cell(datum));
	if (list->length == list->max_length)
	{
		list->max_length *= 2;
		list->elements = repalloc(list->elements, list->max_length * sizeof(ListCell));
	}
	list->elements[list->length++].ptr_value = datum;
	return list;
}

List *
list_delete_first(List *list)
{
	if (list == NIL)
		return NIL;
	if (list->length == 1)
	{
		pfree(list->elements);
		pfree(list);
		return NIL;
	}
	memmove(list->elements, list->elements + 1, --list->length * sizeof(ListCell));
	return list;
}

/* A list's cells sorted in place by cmp, as list.c's list_sort(). */
void
list_sort(List *list, list_sort_comparator cmp)
{
	if (list != NIL && list->length > 1)
		qsort(list->elements, list->length, sizeof(ListCell),
			  (int (*) (const void *, const void *)) cmp);
}

/*
 * Memory contexts: a context made for a while (redactforms.c's work) is
 * one more pointer that palloc() tells from TopMemoryContext; its chunks
 * are freed with the others by qc_fuzz_reset(), so deleting it does
 * nothing.
 */
static char work_context;

MemoryContext
AllocSetContextCreateInternal(MemoryContext parent, const char *name,
							  Size minContextSize, Size initBlockSize,
							  Size maxBlockSize)
{
	return (MemoryContext) &work_context;
}

void
MemoryContextDelete(MemoryContext context)
{
}

/* A JSON string literal, as utils/adt/json.c writes it. */
void
escape_json(StringInfo buf, const char *str)
{
	appendStringInfoChar(buf, '"');
	for (const char *p = str; *p != '\0'; p++)
	{
		unsigned char c = (unsigned char) *p;

		if (c == '"' || c == '\\')
			appendStringInfo(buf, "\\%c", c);
		else if (c == '\n')
			appendStringInfoString(buf, "\\n");
		else if (c < 0x20)
			appendStringInfo(buf, "\\u%04x", c);
		else
			appendStringInfoChar(buf, c);
	}
	appendStringInfoChar(buf, '"');
}
