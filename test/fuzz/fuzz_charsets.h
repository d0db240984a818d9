/*-------------------------------------------------------------------------
 *
 * fuzz_charsets.h
 *	  Helpers of the content fuzz targets (fuzz_html.c, fuzz_charset.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_FUZZ_CHARSETS_H
#define QC_FUZZ_CHARSETS_H

#include "mb/pg_wchar.h"

#include "content.h"
#include "fuzz.h"

/*
 * A Content-Type charset chosen by a byte: none, UTF-8, the single-byte and
 * multi-byte families iconv decodes, UTF-16, and a label nobody knows.
 */
static inline const char *
qc_fuzz_charset(uint8_t byte)
{
	static const char *const labels[] = {
		NULL, "utf-8", "iso-8859-1", "koi8-r", "windows-1251", "shift_jis",
		"euc-jp", "iso-2022-jp", "gb18030", "big5", "euc-kr", "utf-16le",
		"utf-16be", "no-such-charset",
	};

	return labels[byte % (sizeof(labels) / sizeof(labels[0]))];
}

/* Cutting text (valid UTF-8) at n characters gives valid text of <= n. */
static inline void
qc_fuzz_check_clip(const char *text, int n)
{
	char	   *copy = pstrdup(text);
	size_t		len;

	qc_clip_chars(copy, n);
	len = strlen(copy);
	FUZZ_CHECK(pg_encoding_verifymbstr(PG_UTF8, copy, len) == len,
			   "cut text is not valid UTF-8");
	FUZZ_CHECK(qc_count_chars(copy) <= n, "cut text is too long");
	FUZZ_CHECK(strncmp(copy, text, len) == 0, "cut text is not a prefix");
	pfree(copy);
}

#endif							/* QC_FUZZ_CHARSETS_H */
