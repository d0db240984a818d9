--
-- Character sets, decided as browsers decide them: byte order mark, then
-- the HTTP charset, then <meta charset> / <meta http-equiv> / an XML
-- declaration in the first 1024 bytes, then UTF-8 if the bytes are UTF-8,
-- else windows-1252.  Labels mean what they mean to browsers (latin1 is
-- windows-1252).  The fixture's /bytes route serves the given bytes with
-- the given Content-Type.
--
CREATE FUNCTION qc_test.page(body bytea, content_type text DEFAULT NULL)
RETURNS text LANGUAGE sql STABLE
AS $$ SELECT qc_test.url('/bytes?hex=' || encode(body, 'hex')
         || coalesce('&type=' || replace(replace(content_type, '%', '%25'), ' ', '%20'), '')) $$;

-- the text every page below says, in windows-1252 (0x93/0x94 are curly quotes)
CREATE FUNCTION qc_test.cp1252(html text) RETURNS bytea LANGUAGE sql IMMUTABLE
AS $$ SELECT convert_to(html, 'WIN1252') $$;

-- header only: the HTTP charset
SELECT queryclaw.web_fetch(qc_test.page(qc_test.cp1252('<p>Café “quoted”</p>'),
                                        'text/html; charset=windows-1252'));
-- iso-8859-1 and latin1 are windows-1252: 0x93 is a curly quote, not a C1 control
SELECT queryclaw.web_fetch(qc_test.page(qc_test.cp1252('<p>Café “quoted”</p>'),
                                        'text/html; charset="ISO-8859-1"'));

-- <meta> only: charset attribute, http-equiv, and an XML declaration
SELECT queryclaw.web_fetch(qc_test.page(qc_test.cp1252('<meta charset=latin1><p>Café “quoted”</p>'),
                                        'text/html'));
SELECT queryclaw.web_fetch(qc_test.page(convert_to('<meta http-equiv="Content-Type" content="text/html; charset=koi8-r"><p>Привет, мир</p>', 'KOI8R'),
                                        'text/html'));
SELECT queryclaw.web_fetch(qc_test.page(qc_test.cp1252('<?xml version="1.0" encoding="ISO-8859-1"?><html><p>Café “quoted”</p></html>'),
                                        'text/html'));
-- a non-ASCII <title> before the <meta> (which fools libxml2's own guess)
SELECT queryclaw.web_fetch(qc_test.page(qc_test.cp1252('<title>Crème brûlée</title><meta charset="windows-1252"><p>Recette</p>'),
                                        'text/html'));
-- a declaration inside a comment, or past the first 1024 bytes, does not count
SELECT queryclaw.web_fetch(qc_test.page(convert_to('<!-- <meta charset="koi8-r"> --><p>Grüße</p>', 'UTF8'),
                                        'text/html'));
SELECT right(queryclaw.web_fetch(qc_test.page(convert_to('<p>' || repeat('x', 1100) || '</p><meta charset="koi8-r"><p>Grüße</p>', 'UTF8'),
                                              'text/html')), 5) AS late_meta;
-- a single-byte charset is decoded through a table of its bytes: each of
-- the 128 upper bytes as PostgreSQL's own conversion reads it (the five
-- that windows-1252 leaves undefined as U+FFFD), and a NUL byte dropped
CREATE FUNCTION qc_test.upper_bytes() RETURNS bytea LANGUAGE sql IMMUTABLE
AS $$ SELECT string_agg(set_byte('\x00'::bytea, 0, b), ''::bytea ORDER BY b) FROM generate_series(128, 255) b $$;
CREATE FUNCTION qc_test.upper_chars(encoding name, undefined int[] DEFAULT '{}') RETURNS text LANGUAGE sql IMMUTABLE
AS $$ SELECT string_agg(CASE WHEN b = ANY (undefined) THEN U&'\FFFD'
                             ELSE convert_from(set_byte('\x00'::bytea, 0, b), encoding) END, '' ORDER BY b)
        FROM generate_series(128, 255) b $$;
SELECT queryclaw.web_fetch(qc_test.page('\x41'::bytea || qc_test.upper_bytes() || '\x0042'::bytea,
                                        'text/plain; charset=windows-1252'), 'raw')
       = 'A' || qc_test.upper_chars('WIN1252', '{129,141,143,144,157}') || 'B' AS windows_1252_as_postgres,
       queryclaw.web_fetch(qc_test.page(qc_test.upper_bytes(), 'text/plain; charset=koi8-r'), 'raw')
       = qc_test.upper_chars('KOI8R') AS koi8_r_as_postgres;
-- a page that says UTF-16 but reads as ASCII is read as UTF-8
SELECT queryclaw.web_fetch(qc_test.page(convert_to('<meta charset="utf-16"><p>Grüße</p>', 'UTF8'), 'text/html'));

-- byte order mark only; it also overrides the header and the <meta>
SELECT queryclaw.web_fetch(qc_test.page('\xefbbbf'::bytea || convert_to('<p>Grüße</p>', 'UTF8'), 'text/html'));
SELECT queryclaw.web_fetch(qc_test.page('\xefbbbf'::bytea || convert_to('<meta charset="koi8-r"><p>Grüße</p>', 'UTF8'),
                                        'text/html; charset=windows-1252'));
SELECT queryclaw.web_fetch(qc_test.page('\xfffe3c0070003e0047007200fc00df0065003c002f0070003e00'::bytea, 'text/html'));

-- conflicting declarations: the header wins over the <meta>
SELECT queryclaw.web_fetch(qc_test.page(qc_test.cp1252('<meta charset="utf-8"><p>Café “quoted”</p>'),
                                        'text/html; charset=windows-1252'));
-- an unknown header label is passed over for the <meta>
SELECT queryclaw.web_fetch(qc_test.page(qc_test.cp1252('<meta charset="windows-1252"><p>Café</p>'),
                                        'text/html; charset=no-such-charset'));

-- no declaration at all: UTF-8 when the bytes are UTF-8, else windows-1252
SELECT queryclaw.web_fetch(qc_test.page(convert_to('<p>Grüße “quoted”</p>', 'UTF8'), 'text/html'));
SELECT queryclaw.web_fetch(qc_test.page(qc_test.cp1252('<p>Café “quoted”</p>'), 'text/html'));
-- no Content-Type at all: a body that starts like HTML is HTML
SELECT queryclaw.web_fetch(qc_test.page(convert_to('<!DOCTYPE html><title>T</title><p>Grüße</p>', 'UTF8')));

-- legacy charsets of every script, by their browser labels
SELECT queryclaw.web_fetch(qc_test.page(convert_to('<meta charset="shift_jis"><p>日本語のテキスト</p>', 'SJIS'), 'text/html'));
SELECT queryclaw.web_fetch(qc_test.page(convert_to('<meta charset="gb2312"><p>中文文本</p>', 'GBK'), 'text/html'));
SELECT queryclaw.web_fetch(qc_test.page(convert_to('<meta charset="euc-kr"><p>한국어 텍스트</p>', 'EUC_KR'), 'text/html'));
SELECT queryclaw.web_fetch(qc_test.page(convert_to('<meta charset="big5"><p>繁體中文</p>', 'BIG5'), 'text/html'));
SELECT queryclaw.web_fetch(qc_test.page(convert_to('<p>Ελληνικά</p>', 'ISO_8859_7'), 'text/html; charset=iso-8859-7'));
SELECT queryclaw.web_fetch(qc_test.page(convert_to('<p>Zażółć gęślą jaźń</p>', 'LATIN2'), 'text/html; charset=iso-8859-2'));

-- invalid bytes in declared UTF-8 become U+FFFD; NUL bytes never reach the text
SELECT queryclaw.web_fetch(qc_test.page('\x3c703e6f6b20fffe20626164c32820656e643c2f703e'::bytea,
                                        'text/html; charset=utf-8'));
SELECT queryclaw.web_fetch(qc_test.page('\x3c703e6265666f7265006166746572003c2f703e'::bytea, 'text/html'));
SELECT queryclaw.web_fetch(qc_test.page('\x3c703e6265666f7265006166746572003c2f703e'::bytea, 'text/html'), 'raw')
       = '<p>beforeafter</p>' AS raw_without_nul;
-- (with no valid UTF-8 in it, and no declaration, a page is windows-1252)
SELECT queryclaw.web_fetch(qc_test.page('\x3c703e6f6b00c3283c2f703e'::bytea, 'text/html'), 'article');

-- 'raw' and api_call read HTML with the same rules (here: the <meta>)
SELECT queryclaw.web_fetch(qc_test.page(qc_test.cp1252('<meta charset="windows-1252"><p>Café</p>'), 'text/html'), 'raw');
SELECT r->'body' AS body, r->'metadata'->>'title' AS title
  FROM queryclaw.api_call(qc_test.page(qc_test.cp1252('<meta charset="windows-1252"><title>Crème</title><p>Café</p>'),
                                       'text/html')) AS r;

--
-- Content types
--

-- text of other kinds is returned as it is in every text format
SELECT queryclaw.web_fetch(qc_test.page(convert_to('plain   text, <not> html', 'UTF8'), 'text/plain'), 'article');
SELECT queryclaw.web_fetch(qc_test.page(convert_to('{"a": 1}', 'UTF8'), 'application/json'), 'markdown');
SELECT queryclaw.web_fetch(qc_test.page(qc_test.cp1252('Café'), 'text/plain; charset=windows-1252'), 'text');

-- content that is not text: a clear error naming the type, for every format
-- that makes text; api_call returns it base64-encoded
SELECT qc_test.try(format($$SELECT queryclaw.web_fetch(%L, %L)$$,
                          qc_test.page('\x89504e470d0a1a0a'::bytea, t), f)) AS error
  FROM (VALUES ('image/png', 'text'), ('application/pdf', 'article'),
               ('application/octet-stream', 'markdown'), ('audio/mpeg', 'metadata'),
               ('video/mp4', 'text')) AS v(t, f);
SELECT (r->>'body') AS body, r->>'body_encoding' AS encoding, r ? 'metadata' AS has_metadata
  FROM queryclaw.api_call(qc_test.page('\x255044462d312e340a00ff'::bytea, 'application/pdf')) AS r;
