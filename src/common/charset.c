/*-------------------------------------------------------------------------
 *
 * charset.c
 *	  Content types, character set labels, and conversion of response
 *	  bodies into text that is valid in the database encoding.
 *
 * Bodies come from servers we do not trust, so nothing here raises an error
 * for bad bytes: NUL bytes are dropped, undecodable bytes become U+FFFD, and
 * characters the database encoding cannot hold become '?'.  Every body is
 * first decoded into UTF-8 (natively for UTF-8, through glibc's iconv for
 * the legacy character sets, or a table filled from it for the single-byte
 * ones), then converted into the database encoding with
 * PostgreSQL's own conversion functions.
 *
 * Charset labels are resolved the way browsers do (the WHATWG Encoding
 * Standard), so that "iso-8859-1" means windows-1252 and "gb2312" means
 * GB18030: pages are written against browsers, not against the IANA
 * registry.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <errno.h>
#include <iconv.h>

#include "catalog/namespace.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"

#include "charset.h"

/* U+FFFD REPLACEMENT CHARACTER in UTF-8 */
#define UTF8_REPLACEMENT "\xEF\xBF\xBD"

/* Bytes of UTF-8 converted to the database encoding per call */
#define CONVERSION_CHUNK 65536

/* Bounds of the windows append_valid() verifies at once */
#define VERIFY_MIN_WINDOW 64
#define VERIFY_MAX_WINDOW (1024 * 1024)

/*
 * The WHATWG labels of each encoding we decode, and the name iconv knows it
 * by.  Where glibc's decoder of the same name differs from the browsers', the
 * browsers' superset is chosen (CP932 for Shift_JIS, CP949 for EUC-KR,
 * GB18030 for GBK).  The "replacement" encodings and x-user-defined are left
 * out: their labels count as unknown.
 */
typedef struct QcEncoding
{
	const char *name;			/* iconv name; "UTF-8" is decoded natively */
	const char *labels;			/* lower case, separated by one space */
} QcEncoding;

static const QcEncoding encodings[] = {
	{"UTF-8",
		"utf-8 utf8 unicode-1-1-utf-8 unicode11utf8 unicode20utf8 "
		"x-unicode20utf8"},
	{"WINDOWS-1252",
		"windows-1252 iso-8859-1 latin1 us-ascii ascii ansi_x3.4-1968 "
		"cp1252 cp819 csisolatin1 ibm819 iso-ir-100 iso8859-1 iso88591 "
		"iso_8859-1 iso_8859-1:1987 l1 x-cp1252"},
	{"IBM866", "ibm866 866 cp866 csibm866"},
	{"ISO-8859-2",
		"iso-8859-2 csisolatin2 iso-ir-101 iso8859-2 iso88592 iso_8859-2 "
		"iso_8859-2:1987 l2 latin2"},
	{"ISO-8859-3",
		"iso-8859-3 csisolatin3 iso-ir-109 iso8859-3 iso88593 iso_8859-3 "
		"iso_8859-3:1988 l3 latin3"},
	{"ISO-8859-4",
		"iso-8859-4 csisolatin4 iso-ir-110 iso8859-4 iso88594 iso_8859-4 "
		"iso_8859-4:1988 l4 latin4"},
	{"ISO-8859-5",
		"iso-8859-5 csisolatincyrillic cyrillic iso-ir-144 iso8859-5 "
		"iso88595 iso_8859-5 iso_8859-5:1988"},
	{"ISO-8859-6",
		"iso-8859-6 arabic asmo-708 csiso88596e csiso88596i "
		"csisolatinarabic ecma-114 iso-8859-6-e iso-8859-6-i iso-ir-127 "
		"iso8859-6 iso88596 iso_8859-6 iso_8859-6:1987"},
	{"ISO-8859-7",
		"iso-8859-7 csisolatingreek ecma-118 elot_928 greek greek8 "
		"iso-ir-126 iso8859-7 iso88597 iso_8859-7 iso_8859-7:1987 "
		"sun_eu_greek"},
	{"ISO-8859-8",
		"iso-8859-8 csiso88598e csisolatinhebrew hebrew iso-8859-8-e "
		"iso-ir-138 iso8859-8 iso88598 iso_8859-8 iso_8859-8:1988 visual "
		"iso-8859-8-i csiso88598i logical"},
	{"ISO-8859-10",
		"iso-8859-10 csisolatin6 iso-ir-157 iso8859-10 iso885910 l6 latin6"},
	{"ISO-8859-13", "iso-8859-13 iso8859-13 iso885913"},
	{"ISO-8859-14", "iso-8859-14 iso8859-14 iso885914"},
	{"ISO-8859-15",
		"iso-8859-15 csisolatin9 iso8859-15 iso885915 iso_8859-15 l9"},
	{"ISO-8859-16", "iso-8859-16"},
	{"KOI8-R", "koi8-r cskoi8r koi koi8 koi8_r"},
	{"KOI8-U", "koi8-u koi8-ru"},
	{"MACINTOSH", "macintosh csmacintosh mac x-mac-roman"},
	{"MAC-CYRILLIC", "x-mac-cyrillic x-mac-ukrainian"},
	{"WINDOWS-874",
		"windows-874 dos-874 iso-8859-11 iso8859-11 iso885911 tis-620"},
	{"WINDOWS-1250", "windows-1250 cp1250 x-cp1250"},
	{"WINDOWS-1251", "windows-1251 cp1251 x-cp1251"},
	{"WINDOWS-1253", "windows-1253 cp1253 x-cp1253"},
	{"WINDOWS-1254",
		"windows-1254 cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 "
		"iso88599 iso_8859-9 iso_8859-9:1989 l5 latin5 x-cp1254"},
	{"WINDOWS-1255", "windows-1255 cp1255 x-cp1255"},
	{"WINDOWS-1256", "windows-1256 cp1256 x-cp1256"},
	{"WINDOWS-1257", "windows-1257 cp1257 x-cp1257"},
	{"WINDOWS-1258", "windows-1258 cp1258 x-cp1258"},
	{"GB18030",
		"gbk gb18030 chinese csgb2312 csiso58gb231280 gb2312 gb_2312 "
		"gb_2312-80 iso-ir-58 x-gbk"},
	{"BIG5-HKSCS", "big5 big5-hkscs cn-big5 csbig5 x-x-big5"},
	{"EUC-JP", "euc-jp cseucpkdfmtjapanese x-euc-jp"},
	{"ISO-2022-JP", "iso-2022-jp csiso2022jp"},
	{"CP932",
		"shift_jis csshiftjis ms932 ms_kanji shift-jis sjis windows-31j "
		"x-sjis"},
	{"CP949",
		"euc-kr cseuckr csksc56011987 iso-ir-149 korean ks_c_5601-1987 "
		"ks_c_5601-1989 ksc5601 ksc_5601 windows-949"},
	{"UTF-16LE",
		"utf-16le utf-16 csunicode iso-10646-ucs-2 ucs-2 unicode "
		"unicodefeff"},
	{"UTF-16BE", "utf-16be unicodefffe"},
};

/* Longer than any label in the table */
#define MAX_LABEL_LEN 32

static inline bool
is_http_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

/* Does the space-separated list contain the word? */
static bool
list_contains(const char *list, const char *word, size_t wordlen)
{
	const char *p = list;

	while ((p = strstr(p, word)) != NULL)
	{
		if ((p == list || p[-1] == ' ') &&
			(p[wordlen] == ' ' || p[wordlen] == '\0'))
			return true;
		p += wordlen;
	}
	return false;
}

/*
 * The iconv name of the encoding a charset label denotes ("latin1" gives
 * "WINDOWS-1252"), or NULL for a label we do not know.
 */
const char *
qc_charset_lookup(const char *label)
{
	char		key[MAX_LABEL_LEN + 1];
	size_t		len = 0;
	int			i;

	if (label == NULL)
		return NULL;
	while (is_http_space(*label))
		label++;
	while (label[len] != '\0' && !is_http_space(label[len]))
	{
		if (len == MAX_LABEL_LEN)
			return NULL;
		key[len] = pg_ascii_tolower((unsigned char) label[len]);
		len++;
	}
	key[len] = '\0';
	if (len == 0)
		return NULL;

	for (i = 0; i < lengthof(encodings); i++)
	{
		if (list_contains(encodings[i].labels, key, len))
			return encodings[i].name;
	}
	return NULL;
}

/*
 * The value of the charset parameter in a Content-Type header value (or in
 * a <meta> element's content attribute, which has the same form), palloc'd
 * in lower case; NULL when there is none.
 */
char *
qc_content_type_charset(const char *content_type)
{
	const char *p;

	if (content_type == NULL)
		return NULL;
	for (p = content_type; *p != '\0'; p++)
	{
		const char *value;
		size_t		len;
		char	   *result;
		char	   *c;

		if (pg_strncasecmp(p, "charset", 7) != 0)
			continue;
		value = p + 7;
		while (is_http_space(*value))
			value++;
		if (*value != '=')
			continue;
		value++;
		while (is_http_space(*value))
			value++;
		if (*value == '"' || *value == '\'')
		{
			const char *close = strchr(value + 1, *value);

			value++;
			len = close ? close - value : strlen(value);
		}
		else
			len = strcspn(value, " \t\r\n\f;,\"'");
		if (len == 0)
			return NULL;
		result = pnstrdup(value, len);
		for (c = result; *c != '\0'; c++)
			*c = pg_ascii_tolower((unsigned char) *c);
		return result;
	}
	return NULL;
}

/*
 * The media type of a Content-Type value ("Text/HTML; charset=x" gives
 * "text/html") in buf, in lower case; false when there is none or it does
 * not fit.
 */
static bool
media_type(const char *content_type, char *buf, size_t bufsize)
{
	const char *p = content_type;
	size_t		len = 0;

	if (p == NULL)
		return false;
	while (is_http_space(*p))
		p++;
	while (p[len] != '\0' && p[len] != ';' && !is_http_space(p[len]))
	{
		if (len + 1 >= bufsize)
			return false;
		buf[len] = pg_ascii_tolower((unsigned char) p[len]);
		len++;
	}
	buf[len] = '\0';
	return len > 0;
}

/* Does the media type end with the structured syntax suffix ("+json")? */
static bool
has_suffix(const char *type, const char *suffix)
{
	size_t		tlen = strlen(type);
	size_t		slen = strlen(suffix);

	return tlen > slen && strcmp(type + tlen - slen, suffix) == 0;
}

bool
qc_content_type_is_html(const char *content_type)
{
	char		type[128];

	return media_type(content_type, type, sizeof(type)) &&
		(strcmp(type, "text/html") == 0 ||
		 strcmp(type, "application/xhtml+xml") == 0);
}

bool
qc_content_type_is_json(const char *content_type)
{
	char		type[128];

	return media_type(content_type, type, sizeof(type)) &&
		(strcmp(type, "application/json") == 0 ||
		 strcmp(type, "text/json") == 0 ||
		 has_suffix(type, "+json"));
}

/*
 * Text that can be returned as it is: every text/ type, JSON and XML of any
 * flavour, and the application/ types that are source code or form data.
 */
bool
qc_content_type_is_text(const char *content_type)
{
	static const char *const text_types[] = {
		"application/xml", "application/javascript", "application/ecmascript",
		"application/x-javascript", "application/x-www-form-urlencoded",
		"application/x-sh", "application/sql", "application/graphql",
		"application/yaml", "application/x-yaml", "application/toml",
		"application/x-ndjson", "application/csv", "application/rtf",
		"message/rfc822",
	};
	char		type[128];
	int			i;

	if (!media_type(content_type, type, sizeof(type)))
		return false;
	if (strncmp(type, "text/", 5) == 0 || has_suffix(type, "+xml") ||
		qc_content_type_is_json(content_type))
		return true;
	for (i = 0; i < lengthof(text_types); i++)
	{
		if (strcmp(type, text_types[i]) == 0)
			return true;
	}
	return false;
}

/*
 * How many bytes at p (where UTF-8 is invalid) one U+FFFD stands for: the
 * longest prefix of a valid sequence (the "maximal subpart" rule that
 * browsers and Python follow), or a single byte that cannot start one.
 */
static int
invalid_utf8_length(const unsigned char *p, const unsigned char *end)
{
	int			len = 1;

	if (pg_utf8_islegal(p, 1))
	{
		int			want = pg_utf_mblen(p);

		while (len < want && p + len < end && pg_utf8_islegal(p, len + 1))
			len++;
	}
	return len;
}

/*
 * The length of a window of at most max bytes at p, ended on a UTF-8
 * character boundary (unless the bytes there are not UTF-8 at all).
 */
static int
utf8_window(const char *p, const char *end, int max)
{
	int			len = Min(end - p, max);
	int			i;

	for (i = 0; i < 3 && p + len < end && (p[len] & 0xC0) == 0x80; i++)
		len--;
	return len;
}

/*
 * Append len bytes of text in the given encoding to out, replacing each
 * invalid sequence by replacement (valid in that encoding) and dropping NUL
 * bytes.  In UTF-8 one replacement stands for a maximal subpart (see
 * invalid_utf8_length), elsewhere for one byte.
 *
 * PostgreSQL's verifier has a fast path that checks its whole input before
 * it looks for where an error lies, which would make this loop quadratic on
 * a body full of bad bytes; so it is given windows that double while the
 * text is valid and shrink at each error.  A window may end inside a valid
 * character: the next window then starts with it, whole.
 */
static void
append_valid(StringInfo out, int encoding, const char *data, size_t len,
			 const char *replacement)
{
	const char *p = data;
	const char *end = data + len;
	int			window = VERIFY_MIN_WINDOW;

	while (p < end)
	{
		int			chunk = Min(end - p, window);
		int			valid;

		CHECK_FOR_INTERRUPTS();
		valid = pg_encoding_verifymbstr(encoding, p, chunk);
		appendBinaryStringInfo(out, p, valid);
		p += valid;
		if (valid == chunk)
		{
			window = Min(window * 2, VERIFY_MAX_WINDOW);
			continue;
		}
		/* cut by the window's end, not invalid (chunk >= any character) */
		if (valid > 0 && pg_encoding_verifymbchar(encoding, p, end - p) > 0)
			continue;
		window = VERIFY_MIN_WINDOW;
		if (*p == '\0')
			p++;
		else
		{
			appendStringInfoString(out, replacement);
			p += encoding == PG_UTF8 ?
				invalid_utf8_length((const unsigned char *) p,
									(const unsigned char *) end) : 1;
		}
	}
}

/* Append UTF-8 to out, each invalid sequence becoming U+FFFD. */
static void
append_utf8(StringInfo out, const char *data, size_t len)
{
	append_valid(out, PG_UTF8, data, len, UTF8_REPLACEMENT);
}

/* Remove the NUL bytes in out from offset start on. */
static void
drop_nul_bytes(StringInfo out, int start)
{
	char	   *src = memchr(out->data + start, '\0', out->len - start);
	char	   *dst = src;
	char	   *end = out->data + out->len;

	if (src == NULL)
		return;
	for (; src < end; src++)
	{
		if (*src != '\0')
			*dst++ = *src;
	}
	out->len = dst - out->data;
	out->data[out->len] = '\0';
}

/*
 * The iconv loop of append_decoded(): decode all of data with cd, replacing
 * each byte the decoder rejects by U+FFFD.
 */
static void
iconv_loop(StringInfo out, iconv_t cd, const char *data, size_t len)
{
	char	   *in = unconstify(char *, data);
	size_t		inleft = len;

	while (inleft > 0)
	{
		char	   *outp;
		size_t		outleft;
		size_t		rc;

		CHECK_FOR_INTERRUPTS();

		/* most text does not grow by more than this; E2BIG brings us back */
		enlargeStringInfo(out, Min(inleft, CONVERSION_CHUNK) * 2 + 16);
		outp = out->data + out->len;
		outleft = out->maxlen - out->len - 1;
		rc = iconv(cd, &in, &inleft, &outp, &outleft);
		out->len = outp - out->data;
		out->data[out->len] = '\0';
		if (rc != (size_t) -1 || errno == E2BIG)
			continue;

		/* EILSEQ (bad byte) or EINVAL (truncated sequence at the end) */
		appendBinaryStringInfo(out, UTF8_REPLACEMENT, 3);
		in++;
		inleft--;
	}
}

/*
 * A single-byte charset (the windows-125x and ISO-8859 families, KOI8...)
 * is decoded through a table of what each byte becomes, filled from iconv a
 * byte at a time: glibc's iconv spends some 40 instructions on each byte,
 * the table a few.  The table of the charset used last is kept.
 */
typedef struct ByteTable
{
	char		encoding[MAX_LABEL_LEN + 1];	/* iconv name; "" for none */
	bool		usable;			/* false: multi-byte or stateful */
	uint8		len[256];		/* bytes of UTF-8 each byte becomes */
	char		utf8[256][4];
} ByteTable;

static ByteTable byte_table;

/*
 * Fill byte_table for encoding, from cd.  Only a charset in which every
 * byte on its own decodes at once into one character of at most three
 * bytes of UTF-8, or is rejected, can be decoded by table: a lead byte
 * (EINVAL) means a multi-byte charset, and a byte that gives nothing until
 * the next one (windows-1258 composes accents) a stateful one.
 */
static void
fill_byte_table(iconv_t cd)
{
	byte_table.usable = true;
	for (int b = 0; b < 256 && byte_table.usable; b++)
	{
		char		byte = (char) b;
		char	   *in = &byte;
		size_t		inleft = 1;
		char	   *outp = byte_table.utf8[b];
		size_t		outleft = 3;

		iconv(cd, NULL, NULL, NULL, NULL);
		if (iconv(cd, &in, &inleft, &outp, &outleft) == (size_t) -1)
		{
			byte_table.usable = (errno == EILSEQ);
			memcpy(byte_table.utf8[b], UTF8_REPLACEMENT, 3);
			byte_table.len[b] = 3;
			continue;
		}
		byte_table.len[b] = 3 - outleft;
		byte_table.usable = byte_table.len[b] > 0;
		/* a decoder turns a zero byte into U+0000: it is dropped */
		if (byte_table.len[b] == 1 && byte_table.utf8[b][0] == '\0')
			byte_table.len[b] = 0;
	}
}

/*
 * Is encoding one that byte_table can decode?  The table is filled for it
 * first if it holds another (or nothing).  Filling runs iconv alone: no
 * PostgreSQL error can come out of it.
 */
static bool
byte_table_for(const char *encoding)
{
	iconv_t		cd;

	if (strcmp(byte_table.encoding, encoding) == 0)
		return byte_table.usable;
	strlcpy(byte_table.encoding, encoding, sizeof(byte_table.encoding));
	cd = iconv_open("UTF-8", encoding);
	if (cd == (iconv_t) -1)
		byte_table.usable = false;
	else
	{
		fill_byte_table(cd);
		iconv_close(cd);
	}
	return byte_table.usable;
}

/* Append data to out as UTF-8 through byte_table. */
static void
append_by_table(StringInfo out, const unsigned char *data, size_t len)
{
	while (len > 0)
	{
		size_t		chunk = Min(len, CONVERSION_CHUNK);
		char	   *outp;

		CHECK_FOR_INTERRUPTS();
		enlargeStringInfo(out, chunk * 3);
		outp = out->data + out->len;
		for (size_t i = 0; i < chunk; i++)
		{
			memcpy(outp, byte_table.utf8[data[i]], 4);
			outp += byte_table.len[data[i]];
		}
		out->len = outp - out->data;
		out->data[out->len] = '\0';
		data += chunk;
		len -= chunk;
	}
}

/*
 * Append data, in the encoding iconv knows as encoding, to out as UTF-8.
 * The iconv handle is closed on every path, errors included (the loop
 * allocates memory and checks for interrupts).
 */
static void
append_decoded(StringInfo out, const char *data, size_t len,
			   const char *encoding)
{
	int			start = out->len;
	iconv_t		cd;

	if (byte_table_for(encoding))
	{
		append_by_table(out, (const unsigned char *) data, len);
		return;
	}
	cd = iconv_open("UTF-8", encoding);

	/* glibc without its gconv modules: better U+FFFD than nothing */
	if (cd == (iconv_t) -1)
	{
		append_utf8(out, data, len);
		return;
	}
	PG_TRY();
	{
		iconv_loop(out, cd, data, len);
	}
	PG_CATCH();
	{
		iconv_close(cd);
		PG_RE_THROW();
	}
	PG_END_TRY();
	iconv_close(cd);

	/* a decoder turns a zero byte into U+0000 */
	drop_nul_bytes(out, start);
}

/*
 * Decode len bytes in the named charset into palloc'd UTF-8 with no NUL and
 * no invalid sequence; *outlen receives its length.  A byte order mark
 * overrides the charset, as in browsers.  NULL or an unknown charset means
 * UTF-8.
 */
char *
qc_to_utf8(const char *data, size_t len, const char *charset, size_t *outlen)
{
	const unsigned char *bytes = (const unsigned char *) data;
	const char *encoding = qc_charset_lookup(charset);
	StringInfoData out;

	size_t		bom = 0;

	if (len >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF)
	{
		encoding = "UTF-8";
		bom = 3;
	}
	else if (len >= 2 && bytes[0] == 0xFF && bytes[1] == 0xFE)
	{
		encoding = "UTF-16LE";
		bom = 2;
	}
	else if (len >= 2 && bytes[0] == 0xFE && bytes[1] == 0xFF)
	{
		encoding = "UTF-16BE";
		bom = 2;
	}
	data += bom;
	len -= bom;

	initStringInfo(&out);
	if (encoding == NULL || strcmp(encoding, "UTF-8") == 0)
		append_utf8(&out, data, len);
	else
		append_decoded(&out, data, len, encoding);
	*outlen = out.len;
	return out.data;
}

/*
 * Convert valid, NUL-free UTF-8 into the database encoding, writing '?' for
 * each character the database encoding cannot hold.  Returns utf8 itself
 * when no conversion is needed (a SQL_ASCII database gets UTF-8).
 */
static char *
utf8_to_server(char *utf8, size_t len)
{
	int			encoding = GetDatabaseEncoding();
	int			bufsize = CONVERSION_CHUNK * MAX_CONVERSION_GROWTH + 1;
	unsigned char *buf;
	const char *p = utf8;
	const char *end = utf8 + len;
	Oid			proc;
	StringInfoData out;

	if (encoding == PG_UTF8 || encoding == PG_SQL_ASCII)
		return utf8;

	/* without a conversion (MULE_INTERNAL), keep only ASCII */
	proc = FindDefaultConversionProc(PG_UTF8, encoding);
	buf = palloc(bufsize);
	initStringInfo(&out);
	while (p < end)
	{
		int			chunk = utf8_window(p, end, CONVERSION_CHUNK);
		int			done;

		if (OidIsValid(proc))
		{
			done = pg_do_encoding_conversion_buf(proc, PG_UTF8, encoding,
												 (unsigned char *) p, chunk,
												 buf, bufsize, true);
			appendStringInfoString(&out, (char *) buf);
		}
		else
		{
			for (done = 0; done < chunk && IS_HIGHBIT_SET(p[done]) == 0; done++)
				;
			appendBinaryStringInfo(&out, p, done);
		}
		p += done;

		/* the conversion stopped at a character it cannot represent */
		if (done < chunk)
		{
			appendStringInfoChar(&out, '?');
			p += pg_utf_mblen((const unsigned char *) p);
		}
		CHECK_FOR_INTERRUPTS();
	}
	pfree(buf);
	return out.data;
}

char *
qc_to_server_text(const char *data, size_t len, const char *charset)
{
	size_t		utf8len;
	char	   *utf8 = qc_to_utf8(data, len, charset, &utf8len);
	char	   *result = utf8_to_server(utf8, utf8len);

	if (result != utf8)
		pfree(utf8);
	return result;
}

char *
qc_valid_text(const char *s)
{
	int			encoding = GetDatabaseEncoding();
	size_t		len;
	StringInfoData out;

	if (s == NULL)
		return NULL;
	len = strlen(s);
	if (pg_verify_mbstr(encoding, s, len, true))
		return unconstify(char *, s);
	/*
	 * No server encoding but UTF8 has U+FFFD.  Deciding that without a
	 * conversion lookup keeps this free of catalog access, for the audit's
	 * error and exit paths.
	 */
	initStringInfo(&out);
	append_valid(&out, encoding, s, len, encoding == PG_UTF8 ? UTF8_REPLACEMENT : "?");
	return out.data;
}

bool
qc_is_utf8(const char *data, size_t len)
{
	const char *p = data;
	const char *end = data + len;

	while (p < end)
	{
		int			chunk = utf8_window(p, end, VERIFY_MAX_WINDOW);

		CHECK_FOR_INTERRUPTS();
		if (pg_encoding_verifymbstr(PG_UTF8, p, chunk) != chunk)
			return false;
		p += chunk;
	}
	return true;
}

bool
qc_exceeds_chars(const char *s, int max_chars)
{
	int			len = strlen(s);

	return pg_mbcharcliplen(s, len, Max(max_chars, 0)) < len;
}

bool
qc_clip_chars(char *s, int max_chars)
{
	int			len = strlen(s);
	int			cut = pg_mbcharcliplen(s, len, Max(max_chars, 0));

	if (cut >= len)
		return false;
	s[cut] = '\0';
	return true;
}

char *
qc_text_quote(const char *text)
{
	char	   *quote = pstrdup(text);
	size_t		len;

	qc_clip_chars(quote, QC_QUOTE_CHARS);
	len = strlen(quote);
	while (len > 0 && isspace((unsigned char) quote[len - 1]))
		quote[--len] = '\0';
	return quote[0] ? psprintf("The response began: %s", quote) : NULL;
}

int
qc_count_chars(const char *s)
{
	return pg_mbstrlen(s);
}
