/* queryclaw_ext 0.2 -> 0.3: every change to SQL objects since release 0.2 */

\echo Use "ALTER EXTENSION queryclaw_ext UPDATE TO '0.3'" to load this file. \quit

-- Release 0.2 (tag v0.2.0) is what users have installed; its scripts,
-- queryclaw_ext--0.1.sql and queryclaw_ext--0.1--0.2.sql, are never
-- changed again.  Every change to the extension's SQL objects from then on
-- goes here, and test/upgrade/ checks that a database updated from 0.1 and
-- one updated from 0.2 both end equal to a fresh install.  No object has
-- changed since 0.2 yet.
