--
-- What the fuzzers (test/fuzz) found that needs only a server: make
-- installcheck runs this (014_fuzz_findings has the cases that need the
-- fixture).  Each case also stays in the fuzzers' corpus.
--
-- a host list entry ending in two dots could never match anything: refused
SELECT qc_test.try($$SET queryclaw.denied_hosts = 'example.com..'$$) AS two_final_dots;

-- markdown: a table inside a pipe table (here in a blockquote that libxml2
-- keeps directly in the <table>) ended the outer table early, and the
-- blockquote then closed a box it had not opened, writing before the start
-- of an array
SELECT queryclaw.html_to_text('<table><th>b</th><blockquote><table></table></table><blockquote>3', 'markdown') AS minimal;
SELECT queryclaw.html_to_text('<table><tr><td>a</td><td>b</td></tr><blockquote><table><tr><td>x</td></tr></table></blockquote><tr><td>c</td><td>d</td></tr></table><blockquote>after</blockquote>', 'markdown') AS nested;
