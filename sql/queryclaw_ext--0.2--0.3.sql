/* queryclaw_ext 0.2 -> 0.3: every change to SQL objects since release 0.2 */

\echo Use "ALTER EXTENSION queryclaw_ext UPDATE TO '0.3'" to load this file. \quit

-- Release 0.2 (tag v0.2.0) is what users have installed; its scripts,
-- queryclaw_ext--0.1.sql and queryclaw_ext--0.1--0.2.sql, are never
-- changed again.  Every change to the extension's SQL objects from then on
-- goes here, and test/upgrade/ checks that a database updated from 0.1 and
-- one updated from 0.2 both end equal to a fresh install.  Its sections:
-- enrichments, MCP servers' tools, a newcomer's first hour, callbacks run
-- apart from the requests.

--
-- Enrichments: columns kept filled from an API or a model, declared once
-- (docs/enrichments.md).  An enrichment is a row of enrichment_definitions;
-- each row of its source table has a row of enrichment_rows once it has
-- been seen (stale, running, done, failed or skipped); each distinct
-- request it asked is a row of enrichment_calls (in flight, or its result
-- kept for cache_ttl), so that rows asking the same thing share one call.
--
-- Everything an enrichment does runs as its owner: create_enrichment and
-- the functions beside it as the calling role, the feed in the enrichment
-- worker and the write-back in the callback workers as the owner (a
-- role's session, as a callback's).  So the three tables are written by their owners, each row
-- visible and writable to the owner alone (row-level security, matched by
-- OID): what an owner changes by hand in its own rows can only make its
-- own enrichment do what the owner could do anyway.  The triggers on the
-- source tables, which run as whoever changes a row, are the one part that
-- writes another role's rows: they are SECURITY DEFINER, mark a row stale
-- and do nothing else.
--
-- Per enrichment, two objects in this schema hold the request and the
-- write-back as parsed at creation (names resolved then, as a view's are):
-- the view enrichment_<id>_request (the key, the hash of the inputs and the
-- request of every source row; security_invoker, so read with the owner's
-- privileges) and the function enrichment_<id>_apply (the UPDATE of one
-- row with a result, only while its inputs are still those it was asked
-- with; SECURITY INVOKER).  The extension's owner creates them
-- (enrichment_define, after checking that each text is one expression or
-- one SET list), and only the enrichment's owner may use them.
--

CREATE TABLE queryclaw.enrichment_definitions (
	id				bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	name			text NOT NULL,
	owner			regrole NOT NULL,
	source			regclass NOT NULL,
	request			text NOT NULL,
	apply			text,
	target			name,
	mode			text NOT NULL,
	cache_ttl		interval NOT NULL,
	paused			boolean NOT NULL DEFAULT false,
	definition_hash text NOT NULL,
	key_columns		name[] NOT NULL,
	input_columns	name[],
	backfill_after	jsonb,
	backfill_done	boolean NOT NULL,
	calls			bigint NOT NULL DEFAULT 0,
	calls_saved		bigint NOT NULL DEFAULT 0,
	tokens			bigint NOT NULL DEFAULT 0,
	last_error		text,
	created_at		timestamptz NOT NULL DEFAULT pg_catalog.now(),
	UNIQUE (owner, name)
);
COMMENT ON TABLE queryclaw.enrichment_definitions IS
'Enrichments as created by create_enrichment and changed by alter_enrichment: the source table, the request and write-back as given, the columns that are inputs, the backfill''s progress and counters.  Each role sees its own; queryclaw.enrichments shows them.';

CREATE TABLE queryclaw.enrichment_rows (
	enrichment		bigint NOT NULL REFERENCES queryclaw.enrichment_definitions ON DELETE CASCADE,
	owner			regrole NOT NULL,
	key				jsonb NOT NULL,
	state			text NOT NULL,
	inputs_hash		text,
	definition_hash text,
	request_hash	text,
	request_id		bigint,
	attempts		integer NOT NULL DEFAULT 0,
	error			text,
	sqlstate		text,
	enriched_at		timestamptz,
	PRIMARY KEY (enrichment, key)
);
COMMENT ON TABLE queryclaw.enrichment_rows IS
'Each source row of each enrichment: its primary key (key), state (stale: to be asked; running: its request is queued or on the wire; done; failed; skipped: its request expression was NULL), the hashes of the inputs and definition it was asked with, its request, attempts, last error and when it was written.  Each role sees its own enrichments'' rows.';
-- The stale rows, read from the highest key down: a backfill walks the
-- table up by key, so the rows asked already (whose entries stay, dead,
-- until VACUUM) lie below the ones still to ask, and a read finds these
-- first, not after the dead entries of every row asked since the last
-- VACUUM (40,000 a read, 200,000 rows into a backfill, read from below).
CREATE INDEX enrichment_rows_stale_idx ON queryclaw.enrichment_rows (enrichment, key)
	WHERE state = 'stale';
CREATE INDEX enrichment_rows_request_idx ON queryclaw.enrichment_rows (request_id)
	WHERE state = 'running';
-- Statistics of the enrichment column describe the enrichments that were
-- there at the last ANALYZE: a new enrichment's rows would be counted as
-- none, and its write-backs and feeds planned as if a walk of all of them
-- cost nothing.  Without them the planner assumes an enrichment has a
-- share of the rows, and takes the request's or the key's index.
ALTER TABLE queryclaw.enrichment_rows ALTER COLUMN enrichment SET STATISTICS 0;

CREATE TABLE queryclaw.enrichment_calls (
	enrichment		bigint NOT NULL REFERENCES queryclaw.enrichment_definitions ON DELETE CASCADE,
	owner			regrole NOT NULL,
	request_hash	text NOT NULL,
	request_id		bigint,
	state			text NOT NULL,
	result			jsonb,
	expires_at		timestamptz,
	PRIMARY KEY (enrichment, request_hash)
);
COMMENT ON TABLE queryclaw.enrichment_calls IS
'Each distinct request an enrichment asked: running (its rows wait for it), done (its result kept until expires_at, cache_ttl after it came, for rows that ask the same) or spent (failed, cancelled, or nothing kept); request_id until its row in queryclaw.requests is deleted.  Each role sees its own.';
CREATE INDEX enrichment_calls_running_idx ON queryclaw.enrichment_calls (enrichment)
	WHERE state = 'running';
ALTER TABLE queryclaw.enrichment_calls ALTER COLUMN enrichment SET STATISTICS 0;
-- calls whose request is final but still in queryclaw.requests, which the
-- feed deletes (enrichment_purge) once there are enough of them
CREATE INDEX enrichment_calls_final_idx ON queryclaw.enrichment_calls (enrichment)
	WHERE state <> 'running' AND request_id IS NOT NULL;

-- Each role reads and writes its own rows, matched by OID; it may create
-- an enrichment only with EXECUTE on create_enrichment, and give its rows
-- states and calls only for its own enrichments.
-- Both are evaluated for every row a policy reads or writes, so each is
-- made to cost little: the first is C; the second is PL/pgSQL, whose
-- statement is planned once a session (a SQL function's is parsed and
-- planned again in every statement that calls it, before PostgreSQL 18),
-- and sets nothing (a SET clause costs each call a GUC nest level of its
-- own): every name in it is qualified instead.
CREATE FUNCTION queryclaw.enrichment_me()
RETURNS oid
AS 'MODULE_PATHNAME', 'enrichment_me'
LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION queryclaw.enrichment_mine(enrichment bigint)
RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
	RETURN EXISTS (SELECT 1 FROM queryclaw.enrichment_definitions d
					WHERE d.id OPERATOR(pg_catalog.=) enrichment_mine.enrichment
					  AND d.owner::pg_catalog.oid OPERATOR(pg_catalog.=) queryclaw.enrichment_me());
END
$$;
--
-- A row of enrichment_rows or enrichment_calls is checked to be of one of
-- the role's enrichments as it is inserted; the columns that say whose and
-- of which enrichment it is (owner, enrichment, and the key or the
-- request's hash) may not be updated, so an update needs no check but the
-- owner's, and no row can be moved into another role's enrichment.
DO $$
DECLARE
	t text;
	mine text;
	updatable text;
BEGIN
	FOREACH t IN ARRAY ARRAY['enrichment_definitions', 'enrichment_rows', 'enrichment_calls'] LOOP
		updatable := CASE t
			WHEN 'enrichment_rows' THEN 'UPDATE (state, inputs_hash, definition_hash, request_hash, request_id, attempts, error, sqlstate, enriched_at)'
			WHEN 'enrichment_calls' THEN 'UPDATE (request_id, state, result, expires_at)'
			ELSE 'UPDATE' END;
		EXECUTE format('REVOKE ALL ON queryclaw.%I FROM PUBLIC', t);
		EXECUTE format('GRANT SELECT, INSERT, DELETE, %s ON queryclaw.%I TO PUBLIC', updatable, t);
		EXECUTE format('ALTER TABLE queryclaw.%I ENABLE ROW LEVEL SECURITY', t);
		EXECUTE format('CREATE POLICY %I ON queryclaw.%I FOR SELECT USING (owner OPERATOR(pg_catalog.=) queryclaw.enrichment_me())',
					   t || '_own_rows', t);
		EXECUTE format('CREATE POLICY %I ON queryclaw.%I FOR DELETE USING (owner OPERATOR(pg_catalog.=) queryclaw.enrichment_me())',
					   t || '_own_delete', t);
		mine := CASE t WHEN 'enrichment_definitions'
					   THEN 'pg_catalog.has_function_privilege(''queryclaw.create_enrichment(text, regclass, text, text, name, text, boolean, interval)'', ''EXECUTE'')'
					   ELSE 'queryclaw.enrichment_mine(enrichment)' END;
		EXECUTE format('CREATE POLICY %I ON queryclaw.%I FOR INSERT WITH CHECK (owner OPERATOR(pg_catalog.=) queryclaw.enrichment_me() AND %s)',
					   t || '_own_insert', t, mine);
		EXECUTE format('CREATE POLICY %I ON queryclaw.%I FOR UPDATE USING (owner OPERATOR(pg_catalog.=) queryclaw.enrichment_me()) WITH CHECK (owner OPERATOR(pg_catalog.=) queryclaw.enrichment_me() AND %s)',
					   t || '_own_update', t,
					   CASE t WHEN 'enrichment_definitions' THEN mine ELSE 'true' END);
		EXECUTE format('CREATE POLICY %I ON queryclaw.%I FOR SELECT TO queryclaw_admin USING (true)',
					   t || '_admin', t);
		-- the enrichment worker finds the enrichments with work to do
		EXECUTE format('GRANT SELECT, UPDATE ON queryclaw.%I TO queryclaw_writer', t);
		EXECUTE format('CREATE POLICY %I ON queryclaw.%I TO queryclaw_writer USING (true)',
					   t || '_writer', t);
		PERFORM pg_catalog.pg_extension_config_dump('queryclaw.' || t, '');
	END LOOP;
END
$$;
GRANT USAGE ON SEQUENCE queryclaw.enrichment_definitions_id_seq TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('queryclaw.enrichment_definitions_id_seq', '');

-- The request constructors: the arguments of the asynchronous functions,
-- checked as they check them, returned as jsonb for an enrichment's
-- request expression (NULL for a NULL url, prompt or input).
CREATE FUNCTION queryclaw.web_fetch_request(url text, format text DEFAULT 'text',
											max_chars integer DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'web_fetch_request'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.web_fetch_request(text, text, integer) IS
'A web_fetch as an enrichment''s request: the arguments of web_fetch_async, checked as it checks them, as jsonb.';
REVOKE ALL ON FUNCTION queryclaw.web_fetch_request(text, text, integer) FROM PUBLIC;

CREATE FUNCTION queryclaw.api_call_request(url text, method text DEFAULT 'GET',
										   headers jsonb DEFAULT NULL, body text DEFAULT NULL,
										   max_chars integer DEFAULT NULL,
										   idempotency_key text DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'api_call_request'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.api_call_request(text, text, jsonb, text, integer, text) IS
'An api_call as an enrichment''s request: the arguments of api_call_async, checked as it checks them, as jsonb.';
REVOKE ALL ON FUNCTION queryclaw.api_call_request(text, text, jsonb, text, integer, text) FROM PUBLIC;

CREATE FUNCTION queryclaw.llm_request(prompt text,
									  tools text[] DEFAULT '{web_fetch,api_call}',
									  system text DEFAULT NULL, model text DEFAULT NULL,
									  max_rounds integer DEFAULT NULL,
									  output_schema jsonb DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'llm_request'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.llm_request(text, text[], text, text, integer, jsonb) IS
'An llm_chat_tools loop as an enrichment''s request: the arguments of llm_chat_tools_async, checked as it checks them, as jsonb.';
REVOKE ALL ON FUNCTION queryclaw.llm_request(text, text[], text, text, integer, jsonb) FROM PUBLIC;

CREATE FUNCTION queryclaw.llm_embed_request(input text, model text DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'llm_embed_request'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.llm_embed_request(text, text) IS
'An embedding of input (llm_embed) as an enrichment''s request, as jsonb.';
REVOKE ALL ON FUNCTION queryclaw.llm_embed_request(text, text) FROM PUBLIC;

-- Internal: queue an enrichment's embedding request as the calling role
-- (its owner, from enrichment_enqueue), func 'enrichment_embed_async'.  The
-- workers run it as a job of llm_chat_tools_async's kind; the role needs
-- EXECUTE on llm_embed_request (checked here) and on this function.
CREATE FUNCTION queryclaw.enrichment_embed_async(input text, model text, callback regprocedure,
												 context jsonb)
RETURNS bigint
AS 'MODULE_PATHNAME', 'enrichment_embed_async'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

-- Internal: the enrichment's view and write-back function, made (again)
-- from its definition row by the extension's owner once the calling role
-- is found to own it; returns the input columns.  enrichment_undefine
-- drops them.  enrichment_wake asks the enrichment worker to look for
-- stale rows when the transaction commits.
CREATE FUNCTION queryclaw.enrichment_define(enrichment bigint)
RETURNS name[]
AS 'MODULE_PATHNAME', 'enrichment_define'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION queryclaw.enrichment_undefine(enrichment bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'enrichment_undefine'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
CREATE FUNCTION queryclaw.enrichment_wake()
RETURNS void
AS 'MODULE_PATHNAME', 'enrichment_wake'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

-- Internal: cancel the calling role's own requests among ids, as
-- cancel_requests does, for an enrichment that is dropped (its owner may
-- have no EXECUTE on cancel_requests) or whose rows were deleted (the
-- trigger, which runs as the tables' owner, passes the enrichment's owner).
-- A role can only ever cancel its own requests through it.
CREATE FUNCTION queryclaw.enrichment_cancel(ids bigint[], owner regrole)
RETURNS integer
AS 'MODULE_PATHNAME', 'enrichment_cancel'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

-- Internal: delete the calling role's own final requests among ids: an
-- enrichment's, once their results were written, so that a backfill keeps
-- about a thousand of its rows in queryclaw.requests.
CREATE FUNCTION queryclaw.enrichment_purge(ids bigint[])
RETURNS bigint
AS 'MODULE_PATHNAME', 'enrichment_purge'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;

-- The caller's enrichment of that name (row-level security shows only its
-- own), locked; 42704 when it has none.
CREATE FUNCTION queryclaw.enrichment_find(name text)
RETURNS queryclaw.enrichment_definitions
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	d queryclaw.enrichment_definitions;
BEGIN
	SELECT * INTO d FROM queryclaw.enrichment_definitions e
	 WHERE e.name = enrichment_find.name
	   AND e.owner = queryclaw.enrichment_me()
	   FOR UPDATE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'enrichment "%" does not exist', name
			USING ERRCODE = 'undefined_object',
				  HINT = 'queryclaw.enrichments lists the enrichments you own.';
	END IF;
	RETURN d;
END
$$;

-- The triggers that keep a live enrichment's rows' states: an INSERT makes
-- its rows stale, an UPDATE that changes an input (or the key) makes its
-- row stale, a DELETE forgets the rows and cancels what was queued for
-- them alone.  WHEN and UPDATE OF keep every other UPDATE free.
CREATE FUNCTION queryclaw.enrichment_triggers_make(d queryclaw.enrichment_definitions)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	watched name[] := ARRAY(SELECT DISTINCT c FROM unnest(d.input_columns || d.key_columns) c);
	changed text;
BEGIN
	IF NOT queryclaw.enrichment_citus_triggers(d) THEN
		RETURN;
	END IF;
	EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS qc_new'
				   ' FOR EACH STATEMENT EXECUTE FUNCTION queryclaw.enrichment_on_insert(%L)',
				   'queryclaw_enrichment_' || d.id || '_insert', d.source, d.id);
	EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %s REFERENCING OLD TABLE AS qc_old'
				   ' FOR EACH STATEMENT EXECUTE FUNCTION queryclaw.enrichment_on_delete(%L)',
				   'queryclaw_enrichment_' || d.id || '_delete', d.source, d.id);
	SELECT string_agg(format('OLD.%1$I IS DISTINCT FROM NEW.%1$I', c), ' OR ')
	  INTO changed FROM unnest(watched) c;
	EXECUTE format('CREATE TRIGGER %I AFTER UPDATE OF %s ON %s FOR EACH ROW WHEN (%s)'
				   ' EXECUTE FUNCTION queryclaw.enrichment_on_update(%L)',
				   'queryclaw_enrichment_' || d.id || '_update',
				   (SELECT string_agg(quote_ident(c), ', ') FROM unnest(watched) c),
				   d.source, changed, d.id);
END
$$;

CREATE FUNCTION queryclaw.enrichment_triggers_drop(d queryclaw.enrichment_definitions)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	t text;
BEGIN
	IF NOT queryclaw.enrichment_citus_triggers(d) THEN
		RETURN;
	END IF;
	FOR t IN SELECT tgname FROM pg_trigger
			  WHERE tgrelid = d.source AND tgname LIKE 'queryclaw\_enrichment\_' || d.id || '\_%' LOOP
		EXECUTE format('DROP TRIGGER %I ON %s', t, d.source);
	END LOOP;
END
$$;

-- The definition a trigger fires for, when the trigger is on its source.
CREATE FUNCTION queryclaw.enrichment_for_trigger(id text, relid oid)
RETURNS queryclaw.enrichment_definitions
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT * FROM queryclaw.enrichment_definitions d
	 WHERE d.id = $1::bigint AND d.source::oid = $2 AND d.mode = 'live'
$$;

-- jsonb_build_object('k1', <prefix>k1, ...): a row's key as enrichment_rows keeps it.
CREATE FUNCTION queryclaw.enrichment_key_expression(keys name[], prefix text)
RETURNS text
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
	SELECT 'pg_catalog.jsonb_build_object(' ||
		   string_agg(format('%L, %s%I', k, prefix, k), ', ') || ')'
	  FROM unnest(keys) k
$$;

-- A new row has no state yet (but after a TRUNCATE, which fires no
-- trigger): the rows are inserted where they have none, a plain insert
-- that costs less than ON CONFLICT's speculative one, and only when some
-- had one are those made stale.  Should another transaction give one of
-- these keys a state meanwhile (a backfill's walk, whose snapshot still
-- saw a deleted row of that key), the statement is made again with ON
-- CONFLICT, rather than fail the user's INSERT.
CREATE FUNCTION queryclaw.enrichment_on_insert()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	d queryclaw.enrichment_definitions := queryclaw.enrichment_for_trigger(TG_ARGV[0], queryclaw.enrichment_citus_table(TG_RELID));
	k text;
	made bigint;
BEGIN
	IF d.id IS NULL THEN
		RETURN NULL;
	END IF;
	k := queryclaw.enrichment_key_expression(d.key_columns, 'qc_new.');
	BEGIN
		EXECUTE format('INSERT INTO queryclaw.enrichment_rows (enrichment, owner, key, state)'
					   ' SELECT $1, $2, n.k, ''stale'' FROM (SELECT %s AS k FROM qc_new) n'
					   ' WHERE NOT EXISTS (SELECT 1 FROM queryclaw.enrichment_rows r'
					   '                    WHERE r.enrichment = $1 AND r.key = n.k)', k)
			USING d.id, d.owner;
		GET DIAGNOSTICS made = ROW_COUNT;
	EXCEPTION WHEN unique_violation THEN
		made := -1;
	END;
	IF made < (SELECT count(*) FROM qc_new) THEN
		EXECUTE format('INSERT INTO queryclaw.enrichment_rows AS r (enrichment, owner, key, state)'
					   ' SELECT $1, $2, %s, ''stale'' FROM qc_new'
					   ' ON CONFLICT (enrichment, key) DO UPDATE SET state = ''stale'', request_id = NULL'
					   ' WHERE r.state <> ''stale''', k)
			USING d.id, d.owner;
	END IF;
	PERFORM queryclaw.enrichment_wake();
	RETURN NULL;
END
$$;

CREATE FUNCTION queryclaw.enrichment_on_update()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	d queryclaw.enrichment_definitions := queryclaw.enrichment_for_trigger(TG_ARGV[0], queryclaw.enrichment_citus_table(TG_RELID));
	old_key jsonb;
	new_key jsonb;
BEGIN
	IF d.id IS NULL THEN
		RETURN NULL;
	END IF;
	SELECT jsonb_object_agg(k, to_jsonb(OLD) -> k), jsonb_object_agg(k, to_jsonb(NEW) -> k)
	  INTO old_key, new_key FROM unnest(d.key_columns) k;
	IF old_key <> new_key THEN
		PERFORM queryclaw.enrichment_forget(d, ARRAY[old_key]);
	END IF;
	INSERT INTO queryclaw.enrichment_rows AS r (enrichment, owner, key, state)
	VALUES (d.id, d.owner, new_key, 'stale')
	ON CONFLICT (enrichment, key) DO UPDATE SET state = 'stale', request_id = NULL
	 WHERE r.state <> 'stale';
	PERFORM queryclaw.enrichment_wake();
	RETURN NULL;
END
$$;

CREATE FUNCTION queryclaw.enrichment_on_delete()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	d queryclaw.enrichment_definitions := queryclaw.enrichment_for_trigger(TG_ARGV[0], queryclaw.enrichment_citus_table(TG_RELID));
	keys jsonb[];
BEGIN
	IF d.id IS NULL THEN
		RETURN NULL;
	END IF;
	EXECUTE format('SELECT array_agg(%s) FROM qc_old',
				   queryclaw.enrichment_key_expression(d.key_columns, 'qc_old.'))
		INTO keys;
	PERFORM queryclaw.enrichment_forget(d, keys);
	RETURN NULL;
END
$$;

-- Forget rows gone from the source: their states go, and a request that
-- no other row waits for is cancelled (not sent, if it was not yet).
CREATE FUNCTION queryclaw.enrichment_forget(d queryclaw.enrichment_definitions, keys jsonb[])
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	orphans bigint[];
BEGIN
	WITH gone AS (
		DELETE FROM queryclaw.enrichment_rows r
		 WHERE r.enrichment = d.id AND r.key = ANY (keys)
		RETURNING r.request_id, r.state)
	SELECT array_agg(DISTINCT g.request_id) INTO orphans
	  FROM gone g
	 WHERE g.state = 'running'
	   AND NOT EXISTS (SELECT 1 FROM queryclaw.enrichment_rows o
						WHERE o.enrichment = d.id AND o.request_id = g.request_id
						  AND o.state = 'running' AND o.key <> ALL (keys));
	IF orphans IS NOT NULL THEN
		PERFORM queryclaw.enrichment_cancel(orphans, d.owner);
	END IF;
END
$$;

-- Make (again) the enrichment's view and write-back and its triggers,
-- from its row; the errors a definition can meet are raised here, when it
-- is created or altered.
CREATE FUNCTION queryclaw.enrichment_build(d queryclaw.enrichment_definitions)
RETURNS queryclaw.enrichment_definitions
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	inputs name[];
BEGIN
	BEGIN
		inputs := queryclaw.enrichment_define(d.id);
	EXCEPTION WHEN datatype_mismatch THEN
		-- apply gives a column a value of another type: the definition's fault
		RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value', MESSAGE = SQLERRM,
			HINT = 'Cast the value to the column''s type in apply.';
	END;
	UPDATE queryclaw.enrichment_definitions e
	   SET input_columns = inputs,
		   key_columns = ARRAY(SELECT a.attname FROM pg_catalog.pg_index i
								 CROSS JOIN LATERAL pg_catalog.unnest(i.indkey) WITH ORDINALITY k(attnum, n)
								 JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
								WHERE i.indrelid = d.source AND i.indisprimary ORDER BY k.n)
	 WHERE e.id = d.id
	RETURNING * INTO d;
	PERFORM queryclaw.enrichment_triggers_drop(d);
	IF d.mode = 'live' THEN
		PERFORM queryclaw.enrichment_triggers_make(d);
	END IF;
	RETURN d;
END
$$;

CREATE FUNCTION queryclaw.create_enrichment(name text, source regclass, request text,
											apply text DEFAULT NULL, target name DEFAULT NULL,
											mode text DEFAULT 'live', backfill boolean DEFAULT true,
											cache_ttl interval DEFAULT '1 day')
RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	d queryclaw.enrichment_definitions;
	me oid := queryclaw.enrichment_me();
	citus jsonb;
BEGIN
	IF name IS NULL OR name OPERATOR(pg_catalog.=) '' OR source IS NULL OR request IS NULL THEN
		RAISE EXCEPTION 'name, source and request must be given'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF (apply IS NULL) OPERATOR(pg_catalog.=) (target IS NULL) THEN
		RAISE EXCEPTION 'exactly one of apply and target must be given'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'apply is a SET list writing the row from result; target names one column that takes the natural value.';
	END IF;
	IF mode IS NULL OR mode OPERATOR(pg_catalog.<>) ALL (ARRAY['live', 'manual']) THEN
		RAISE EXCEPTION 'invalid enrichment mode "%"', mode
			USING ERRCODE = 'invalid_parameter_value', HINT = 'mode is ''live'' or ''manual''.';
	END IF;
	IF cache_ttl IS NULL OR cache_ttl OPERATOR(pg_catalog.<) interval '0' THEN
		RAISE EXCEPTION 'cache_ttl must not be negative' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) source)
		OPERATOR(pg_catalog.<>) ALL (ARRAY['r', 'p']::"char"[]) THEN
		RAISE EXCEPTION '"%" is not a table', source USING ERRCODE = 'wrong_object_type';
	END IF;
	IF NOT pg_catalog.has_table_privilege(source, 'SELECT')
		OR NOT pg_catalog.has_table_privilege(source, 'UPDATE') THEN
		RAISE EXCEPTION 'permission denied for table %', source
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = 'An enrichment reads its source table and writes its results as its owner, who needs SELECT and UPDATE on it.';
	END IF;
	IF mode OPERATOR(pg_catalog.=) 'live' AND NOT pg_catalog.has_table_privilege(source, 'TRIGGER') THEN
		RAISE EXCEPTION 'permission denied for table %', source
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = 'A live enrichment keeps its rows'' states by triggers on the table, which need TRIGGER on it.',
				  HINT = 'Use mode => ''manual'' and refresh_enrichment(), or ask for TRIGGER.';
	END IF;
	citus := queryclaw.enrichment_citus_new(source);
	IF EXISTS (SELECT 1 FROM queryclaw.enrichment_definitions e
				WHERE e.owner OPERATOR(pg_catalog.=) me AND e.name OPERATOR(pg_catalog.=) create_enrichment.name) THEN
		RAISE EXCEPTION 'enrichment "%" already exists', name USING ERRCODE = 'duplicate_object';
	END IF;
	INSERT INTO queryclaw.enrichment_definitions
		(name, owner, source, request, apply, target, mode, cache_ttl, definition_hash, key_columns,
		 backfill_done, citus)
	VALUES (name, me, source, request, apply, target, mode, cache_ttl,
			pg_catalog.md5(pg_catalog.concat_ws(E'\x1f', request, apply, target)), '{}', NOT backfill,
			citus)
	RETURNING * INTO d;
	PERFORM queryclaw.enrichment_build(d);
	PERFORM queryclaw.enrichment_wake();
END
$$;
COMMENT ON FUNCTION queryclaw.create_enrichment(text, regclass, text, text, name, text, boolean, interval) IS
'Keep columns of source filled from an API or a model: request is an expression over a row calling a request constructor (NULL asks nothing), apply the SET list that writes its result into the row (or target, a column for the natural value).  Existing rows are asked unless backfill is false; in live mode, inserted rows and rows whose inputs change are asked as they commit.';
REVOKE ALL ON FUNCTION queryclaw.create_enrichment(text, regclass, text, text, name, text, boolean, interval) FROM PUBLIC;

CREATE FUNCTION queryclaw.alter_enrichment(name text, request text DEFAULT NULL,
										   apply text DEFAULT NULL, target name DEFAULT NULL,
										   reenrich boolean DEFAULT true)
RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	d queryclaw.enrichment_definitions := queryclaw.enrichment_find(name);
BEGIN
	PERFORM queryclaw.enrichment_citus_refuse(d, 'alter_enrichment');
	IF apply IS NOT NULL AND target IS NOT NULL THEN
		RAISE EXCEPTION 'exactly one of apply and target must be given'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	UPDATE queryclaw.enrichment_definitions e
	   SET request = coalesce(alter_enrichment.request, e.request),
		   apply = CASE WHEN alter_enrichment.target IS NOT NULL THEN NULL
						ELSE coalesce(alter_enrichment.apply, e.apply) END,
		   target = CASE WHEN alter_enrichment.apply IS NOT NULL THEN NULL
						 ELSE coalesce(alter_enrichment.target, e.target) END
	 WHERE e.id OPERATOR(pg_catalog.=) d.id
	RETURNING * INTO d;
	UPDATE queryclaw.enrichment_definitions e
	   SET definition_hash = pg_catalog.md5(pg_catalog.concat_ws(E'\x1f', d.request, d.apply, d.target))
	 WHERE e.id OPERATOR(pg_catalog.=) d.id
	RETURNING * INTO d;
	IF reenrich THEN
		-- every row is asked again under the new definition; a result on
		-- its way for the old one is not written
		UPDATE queryclaw.enrichment_rows r SET state = 'stale', request_id = NULL
		 WHERE r.enrichment OPERATOR(pg_catalog.=) d.id AND r.state OPERATOR(pg_catalog.<>) 'stale';
	END IF;
	PERFORM queryclaw.enrichment_build(d);
	PERFORM queryclaw.enrichment_citus_altered(d, reenrich);
	PERFORM queryclaw.enrichment_wake();
END
$$;
COMMENT ON FUNCTION queryclaw.alter_enrichment(text, text, text, name, boolean) IS
'Change an enrichment''s request, apply or target; with reenrich (the default) every row asked under the old definition is asked again, otherwise only rows that change from now on use the new one.';
REVOKE ALL ON FUNCTION queryclaw.alter_enrichment(text, text, text, name, boolean) FROM PUBLIC;

CREATE FUNCTION queryclaw.pause_enrichment(name text)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	d queryclaw.enrichment_definitions := queryclaw.enrichment_find(name);
BEGIN
	UPDATE queryclaw.enrichment_definitions SET paused = true WHERE id = d.id;
	PERFORM queryclaw.enrichment_citus_tell(d, 'pause');
END
$$;
COMMENT ON FUNCTION queryclaw.pause_enrichment(text) IS
'Stop asking: rows keep becoming stale, but no new request is queued until resume_enrichment (requests already queued finish and are written).';
REVOKE ALL ON FUNCTION queryclaw.pause_enrichment(text) FROM PUBLIC;

CREATE FUNCTION queryclaw.resume_enrichment(name text)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	d queryclaw.enrichment_definitions := queryclaw.enrichment_find(name);
BEGIN
	UPDATE queryclaw.enrichment_definitions SET paused = false WHERE id = d.id;
	PERFORM queryclaw.enrichment_citus_tell(d, 'resume');
	PERFORM queryclaw.enrichment_wake();
END
$$;
COMMENT ON FUNCTION queryclaw.resume_enrichment(text) IS
'Ask again what became stale while the enrichment was paused.';
REVOKE ALL ON FUNCTION queryclaw.resume_enrichment(text) FROM PUBLIC;

CREATE FUNCTION queryclaw.retry_enrichment(name text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	d queryclaw.enrichment_definitions := queryclaw.enrichment_find(name);
	n bigint;
BEGIN
	UPDATE queryclaw.enrichment_rows
	   SET state = 'stale', request_id = NULL, attempts = 0
	 WHERE enrichment = d.id AND state = 'failed';
	GET DIAGNOSTICS n = ROW_COUNT;
	n := n + queryclaw.enrichment_citus_tell(d, 'retry');
	PERFORM queryclaw.enrichment_wake();
	RETURN n;
END
$$;
COMMENT ON FUNCTION queryclaw.retry_enrichment(text) IS
'Ask the enrichment''s failed rows again; returns how many.';
REVOKE ALL ON FUNCTION queryclaw.retry_enrichment(text) FROM PUBLIC;

CREATE FUNCTION queryclaw.refresh_enrichment(name text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	d queryclaw.enrichment_definitions := queryclaw.enrichment_find(name);
	made bigint;
	-- a distributed table: the rows of this node's shards
	rows_from text := coalesce(queryclaw.enrichment_citus_rows(d),
							   format('queryclaw.%I', 'enrichment_' || d.id || '_inputs'));
BEGIN
	IF d.citus IS NULL THEN
		PERFORM queryclaw.enrichment_citus_refuse(d, 'refresh_enrichment');
	END IF;
	-- rows never seen, or whose inputs or definition changed since they
	-- were asked, become stale; rows gone from the table are forgotten
	EXECUTE format($q$
		WITH v AS (SELECT %1$s AS key, v.qc_inputs_hash FROM %2$s v),
		gone AS (
			DELETE FROM queryclaw.enrichment_rows r
			 WHERE r.enrichment = $1 AND NOT EXISTS (SELECT 1 FROM v WHERE v.key = r.key)),
		m AS (
			INSERT INTO queryclaw.enrichment_rows AS r (enrichment, owner, key, state)
			SELECT $1, $2, v.key, 'stale' FROM v
			ON CONFLICT (enrichment, key) DO UPDATE SET state = 'stale', request_id = NULL
			 WHERE r.state IN ('done', 'failed', 'skipped')
			   AND (r.definition_hash IS DISTINCT FROM $3
					OR r.inputs_hash IS DISTINCT FROM (SELECT v.qc_inputs_hash FROM v
														WHERE v.key = EXCLUDED.key))
			RETURNING 1)
		SELECT count(*) FROM m$q$,
		queryclaw.enrichment_key_expression(d.key_columns, 'v.'), rows_from)
		INTO made
		USING d.id, d.owner, d.definition_hash;
	UPDATE queryclaw.enrichment_definitions SET backfill_done = true WHERE id = d.id;
	made := made + queryclaw.enrichment_citus_refresh(d);
	PERFORM queryclaw.enrichment_wake();
	RETURN made;
END
$$;
COMMENT ON FUNCTION queryclaw.refresh_enrichment(text) IS
'Ask every row that is stale: never asked, or whose inputs or definition changed since it was asked (for manual mode, or a schedule such as pg_cron''s); returns how many rows it made stale.';
REVOKE ALL ON FUNCTION queryclaw.refresh_enrichment(text) FROM PUBLIC;

CREATE FUNCTION queryclaw.drop_enrichment(name text)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	d queryclaw.enrichment_definitions := queryclaw.enrichment_find(name);
	pending bigint[];
BEGIN
	PERFORM queryclaw.enrichment_triggers_drop(d);
	SELECT array_agg(c.request_id) INTO pending
	  FROM queryclaw.enrichment_calls c
	 WHERE c.enrichment = d.id AND c.state = 'running';
	IF pending IS NOT NULL THEN
		PERFORM queryclaw.enrichment_cancel(pending, d.owner);
	END IF;
	PERFORM queryclaw.enrichment_undefine(d.id);
	DELETE FROM queryclaw.enrichment_definitions WHERE id = d.id;
	PERFORM queryclaw.enrichment_citus_tell(d, 'drop');
END
$$;
COMMENT ON FUNCTION queryclaw.drop_enrichment(text) IS
'Drop an enrichment: its triggers, states and pending requests go; the values it wrote stay.';
REVOKE ALL ON FUNCTION queryclaw.drop_enrichment(text) FROM PUBLIC;

-- At most this many of an enrichment's requests are unfinished at once:
-- the feeder tops them up as they end, so a backfill of any size neither
-- fills the queue nor holds back other roles.
CREATE FUNCTION queryclaw.enrichment_in_flight_cap()
RETURNS integer LANGUAGE sql IMMUTABLE AS 'SELECT 1000';

-- Queue one request as the enrichment's owner, its result to come back
-- through enrichment_done.
CREATE FUNCTION queryclaw.enrichment_enqueue(d queryclaw.enrichment_definitions, req jsonb,
											 request_hash text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	cb regprocedure := 'queryclaw.enrichment_done(bigint, jsonb, text, jsonb)';
	ctx jsonb := jsonb_build_object('enrichment', d.name, 'enrichment_id', d.id,
									'request_hash', request_hash);
BEGIN
	CASE req ->> 'func'
	WHEN 'web_fetch' THEN
		RETURN queryclaw.web_fetch_async(req ->> 'url', coalesce(req ->> 'format', 'text'),
										 (req ->> 'max_chars')::integer, cb, ctx);
	WHEN 'api_call' THEN
		RETURN queryclaw.api_call_async(req ->> 'url', coalesce(req ->> 'method', 'GET'),
										req -> 'headers', req ->> 'body',
										(req ->> 'max_chars')::integer, cb, ctx,
										req ->> 'idempotency_key');
	WHEN 'llm_chat_tools' THEN
		RETURN queryclaw.llm_chat_tools_async(
			req ->> 'prompt',
			CASE WHEN req ? 'tools'
				 THEN ARRAY(SELECT jsonb_array_elements_text(req -> 'tools'))
				 ELSE '{web_fetch,api_call}' END,
			req ->> 'system', req ->> 'model', (req ->> 'max_rounds')::integer,
			req -> 'output_schema', cb, ctx);
	WHEN 'llm_embed' THEN
		RETURN queryclaw.enrichment_embed_async(req ->> 'input', req ->> 'model', cb, ctx);
	ELSE
		RAISE EXCEPTION 'not a request: %', left(req::text, 100)
			USING ERRCODE = 'invalid_parameter_value';
	END CASE;
END
$$;

-- The backfill's walk: the next rows by primary key after where it
-- stopped, each made stale unless it has a state already (a live insert
-- made it stale, or it was asked), in pieces of at most the room the cap
-- leaves, each in a transaction of its own.
CREATE FUNCTION queryclaw.enrichment_walk(d queryclaw.enrichment_definitions, n integer)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	keys text := (SELECT string_agg(quote_ident(k), ', ') FROM unnest(d.key_columns) k);
	walked bigint;
	last jsonb;
	-- a distributed table: the rows of this node's shards
	rows_from text := coalesce(queryclaw.enrichment_citus_rows(d),
							   format('queryclaw.%I', 'enrichment_' || d.id || '_inputs'));
BEGIN
	EXECUTE format($q$
		WITH w AS (
			SELECT %1$s, %2$s AS qc_row_key, v.qc_inputs_hash
			  FROM %3$s v
			 WHERE $3::jsonb IS NULL
				OR (%1$s) > (SELECT %4$s FROM jsonb_populate_record(NULL::%5$s, $3) qc_key)
			 ORDER BY %1$s LIMIT $4),
		m AS (
			INSERT INTO queryclaw.enrichment_rows AS r (enrichment, owner, key, state, inputs_hash)
			SELECT $1, $2, w.qc_row_key, 'stale', w.qc_inputs_hash FROM w
			ON CONFLICT (enrichment, key) DO NOTHING)
		SELECT count(*), (array_agg(w.qc_row_key ORDER BY %6$s))[1] FROM w$q$,
		keys, queryclaw.enrichment_key_expression(d.key_columns, 'v.'), rows_from,
		(SELECT string_agg('qc_key.' || quote_ident(k), ', ') FROM unnest(d.key_columns) k),
		d.source,
		(SELECT string_agg('w.' || quote_ident(k) || ' DESC', ', ') FROM unnest(d.key_columns) k))
		INTO walked, last
		USING d.id, d.owner, d.backfill_after, n;
	UPDATE queryclaw.enrichment_definitions
	   SET backfill_after = coalesce(last, backfill_after), backfill_done = walked < n
	 WHERE id = d.id;
END
$$;

CREATE INDEX enrichment_calls_expiry_idx ON queryclaw.enrichment_calls (enrichment, expires_at)
	WHERE state = 'done';

-- Write result into the rows (keys, each with the inputs hash it was
-- asked with) through the enrichment's apply: done, or stale again when
-- the row changed meanwhile (its newer inputs are asked anew), or failed
-- when apply raised for this result.
CREATE FUNCTION queryclaw.enrichment_apply_rows(d queryclaw.enrichment_definitions, result jsonb,
												keys jsonb[], hashes text[])
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	fn text := format('SELECT queryclaw.%I($1, $2, $3)', 'enrichment_' || d.id || '_apply');
	written bigint;
	err_code text;
	err_text text;
BEGIN
	FOR i IN 1 .. coalesce(array_length(keys, 1), 0) LOOP
		BEGIN
			EXECUTE fn INTO written USING result, keys[i], hashes[i];
			UPDATE queryclaw.enrichment_rows
			   SET state = CASE WHEN written > 0 THEN 'done' ELSE 'stale' END,
				   request_id = NULL, error = NULL, sqlstate = NULL,
				   attempts = attempts + 1,
				   enriched_at = CASE WHEN written > 0 THEN now() ELSE enriched_at END
			 WHERE enrichment = d.id AND key = keys[i];
		EXCEPTION WHEN OTHERS THEN
			err_code := SQLSTATE;
			err_text := 'apply failed: ' || SQLERRM;
			UPDATE queryclaw.enrichment_rows
			   SET state = 'failed', request_id = NULL, error = err_text,
				   sqlstate = err_code, attempts = attempts + 1
			 WHERE enrichment = d.id AND key = keys[i];
		END;
	END LOOP;
END
$$;

-- Ask for up to n stale rows of the enrichment (all of them, or the one
-- row only when one_key is given): rows whose requests are identical share
-- one call, a call already on its way or a result still kept answers
-- without a new one.  Set-based: the new requests are queued in one
-- statement, and one by one only when one of them raises.
-- Returns how many rows it handled.
CREATE FUNCTION queryclaw.enrichment_ask(d queryclaw.enrichment_definitions, n integer,
										 one_key jsonb DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	keys jsonb[];				-- the batch, row by row
	ctids tid[];				-- its rows in enrichment_rows, locked
	hashes text[];
	requests jsonb[];
	rhashes text[];
	known jsonb;				-- request hash -> its call, for those the batch names
	new_hashes text[];			-- distinct requests without a call, to ask
	new_requests jsonb[];
	new_sent text[];			-- those asked, and their request ids
	new_ids bigint[];
	batch jsonb;				-- row key -> [inputs hash, request hash]
	asked jsonb;				-- request hash -> request id
	failed jsonb;				-- request hash -> [error, sqlstate]
	failed_hashes text[] := '{}';
	failed_errors text[] := '{}';
	failed_codes text[] := '{}';
	rid bigint;
	made bigint := 0;
	cached_keys jsonb[] := '{}';
	cached_hashes text[] := '{}';
	bitmap_scans text := current_setting('enable_bitmapscan');
	sorts text := current_setting('enable_sort');
BEGIN
	IF d.citus IS NOT NULL THEN
		SELECT * INTO keys, ctids, hashes, requests, rhashes
		  FROM queryclaw.enrichment_citus_pick(d, n, one_key);
	ELSE
	-- The stale rows are read from the top of their index down, never all
	-- found and then sorted: the planner, which counts a handful of stale
	-- rows, found a bitmap scan and a sort as cheap, and those read every
	-- entry that rows asked since the last VACUUM left in the index (42,000
	-- a turn 100,000 rows into a backfill).
	PERFORM set_config('enable_bitmapscan', 'off', true), set_config('enable_sort', 'off', true);
	EXECUTE format($q$
		WITH s AS (
			SELECT r.key AS qc_row_key, r.ctid AS qc_row_ctid, %3$s
			  FROM queryclaw.enrichment_rows r,
				   jsonb_populate_record(NULL::%4$s, r.key) qc_key
			 WHERE r.enrichment = $1 AND r.state = 'stale' AND ($3::jsonb IS NULL OR r.key = $3)
			 ORDER BY r.key DESC LIMIT $2 FOR UPDATE OF r SKIP LOCKED),
		a AS (
			-- the request of these rows alone: OFFSET 0 keeps the subquery
			-- whole, so that the row is found by its key (an index scan)
			-- before its request is made, never the other way round
			SELECT s.qc_row_key, s.qc_row_ctid, v.qc_inputs_hash, v.qc_request
			  FROM s LEFT JOIN LATERAL (
					SELECT v.qc_inputs_hash, v.qc_request FROM queryclaw.%1$I v
					 WHERE (%2$s) = (%5$s) OFFSET 0) v
				ON true)
		SELECT array_agg(a.qc_row_key), array_agg(a.qc_row_ctid), array_agg(a.qc_inputs_hash),
			   array_agg(a.qc_request), array_agg(md5(a.qc_request::text))
		  FROM a$q$,
		'enrichment_' || d.id || '_request',
		(SELECT string_agg('v.' || quote_ident(k), ', ') FROM unnest(d.key_columns) k),
		(SELECT string_agg('qc_key.' || quote_ident(k), ', ') FROM unnest(d.key_columns) k),
		d.source,
		(SELECT string_agg('s.' || quote_ident(k), ', ') FROM unnest(d.key_columns) k))
		INTO keys, ctids, hashes, requests, rhashes
		USING d.id, n, one_key;
	PERFORM set_config('enable_bitmapscan', bitmap_scans, true), set_config('enable_sort', sorts, true);
	END IF;
	IF keys IS NULL THEN
		RETURN 0;
	END IF;

	-- Every statement on enrichment_rows below finds its rows by ctid =
	-- ANY (an array of the batch's row versions, locked by this
	-- transaction, each written once) and reads what it writes from batch,
	-- a jsonb object by key: a TID scan, and no join, so no plan that
	-- would walk all the enrichment's rows for the batch, whatever the
	-- planner believes of their number (a new enrichment's is a handful
	-- until ANALYZE, and an index scan by enrichment looked cheaper than
	-- one by key for each row).
	SELECT jsonb_object_agg(x.k::text, jsonb_build_array(x.h, x.rh))
	  INTO batch
	  FROM unnest(keys, hashes, rhashes) x(k, h, rh);

	-- gone from the table (no inputs hash): forgotten; NULL request: skipped
	IF array_position(hashes, NULL) IS NOT NULL THEN
		DELETE FROM queryclaw.enrichment_rows r
		 WHERE r.ctid = ANY (ARRAY(SELECT x.t FROM unnest(ctids, hashes) x(t, h) WHERE x.h IS NULL));
	END IF;
	IF array_position(rhashes, NULL) IS NOT NULL THEN
		UPDATE queryclaw.enrichment_rows r
		   SET state = 'skipped', inputs_hash = batch -> r.key::text ->> 0,
			   definition_hash = d.definition_hash,
			   request_hash = NULL, request_id = NULL, error = NULL, sqlstate = NULL,
			   enriched_at = now()
		 WHERE r.ctid = ANY (ARRAY(SELECT x.t FROM unnest(ctids, hashes, rhashes) x(t, h, rh)
									WHERE x.h IS NOT NULL AND x.rh IS NULL));
	END IF;

	-- the calls the batch's requests already have.  Locked: a call's
	-- write-back (enrichment_done) updates it before it writes the rows
	-- waiting for it, so it waits for this transaction's rows to be
	-- committed and sees them; one that came first is seen here as done.
	SELECT jsonb_object_agg(c.request_hash,
							jsonb_build_object('state', c.state, 'id', c.request_id,
											   'fresh', c.expires_at > now()))
	  INTO known
	  FROM unnest(rhashes) h(rh)
	 CROSS JOIN LATERAL (
		 -- one probe of the primary key a request: with the hashes as an
		 -- array, the planner took a scan of every call of the enrichment
		 -- (one a row of the table, for cache_ttl) filtered by the array
		 SELECT c.request_hash, c.state, c.request_id, c.expires_at
		   FROM queryclaw.enrichment_calls c
		  WHERE c.enrichment = d.id AND c.request_hash = h.rh
			FOR SHARE) c;
	known := coalesce(known, '{}');

	-- one call for each distinct request that has none on its way and no
	-- kept result: all in one statement; if one raises (a request the
	-- policy refuses now, or max_queued_per_role), one by one
	SELECT coalesce(array_agg(x.rh), '{}'), coalesce(array_agg(x.req), '{}')
	  INTO new_hashes, new_requests
	  FROM (SELECT DISTINCT ON (x.rh) x.rh, x.req
			  FROM unnest(rhashes, requests) x(rh, req)
			 WHERE x.rh IS NOT NULL
			   AND (known -> x.rh ->> 'state') IS DISTINCT FROM 'running'
			   AND NOT coalesce(known -> x.rh ->> 'state' = 'done'
								AND (known -> x.rh ->> 'fresh')::boolean, false)) x;
	BEGIN
		SELECT coalesce(array_agg(x.rh), '{}'),
			   coalesce(array_agg(queryclaw.enrichment_enqueue(d, x.req, x.rh)), '{}')
		  INTO new_sent, new_ids
		  FROM unnest(new_hashes, new_requests) x(rh, req);
	EXCEPTION WHEN OTHERS THEN
		new_sent := '{}';
		new_ids := '{}';
		FOR i IN 1 .. coalesce(array_length(new_hashes, 1), 0) LOOP
			BEGIN
				rid := queryclaw.enrichment_enqueue(d, new_requests[i], new_hashes[i]);
			EXCEPTION
				WHEN SQLSTATE '53400' THEN
					-- max_queued_per_role reached: the rest wait for room
					EXIT;
				WHEN OTHERS THEN
					failed_hashes := failed_hashes || new_hashes[i];
					failed_errors := failed_errors || SQLERRM;
					failed_codes := failed_codes || SQLSTATE;
					CONTINUE;
			END;
			new_sent := new_sent || new_hashes[i];
			new_ids := new_ids || rid;
		END LOOP;
	END;
	made := coalesce(array_length(new_sent, 1), 0);

	INSERT INTO queryclaw.enrichment_calls AS c (enrichment, owner, request_hash, request_id, state)
	SELECT d.id, d.owner, x.rh, x.rid, 'running'
	  FROM unnest(new_sent, new_ids) x(rh, rid)
	ON CONFLICT (enrichment, request_hash) DO UPDATE
	   SET request_id = EXCLUDED.request_id, state = 'running', result = NULL, expires_at = NULL;
	-- the rows' calls: those on their way already, and those just made
	asked := coalesce((SELECT jsonb_object_agg(k.key, k.value -> 'id') FROM jsonb_each(known) k
						WHERE k.value ->> 'state' = 'running'), '{}')
		|| coalesce((SELECT jsonb_object_agg(a.rh, a.rid) FROM unnest(new_sent, new_ids) a(rh, rid)),
					'{}');
	UPDATE queryclaw.enrichment_rows r
	   SET state = 'running', request_id = (asked ->> (batch -> r.key::text ->> 1))::bigint,
		   request_hash = batch -> r.key::text ->> 1, inputs_hash = batch -> r.key::text ->> 0,
		   definition_hash = d.definition_hash
	 WHERE r.ctid = ANY (ARRAY(SELECT x.t FROM unnest(ctids, rhashes) x(t, rh) WHERE asked ? x.rh));
	IF array_length(failed_hashes, 1) > 0 THEN
		failed := (SELECT jsonb_object_agg(f.rh, jsonb_build_array(f.err, f.code))
					 FROM unnest(failed_hashes, failed_errors, failed_codes) f(rh, err, code));
		UPDATE queryclaw.enrichment_rows r
		   SET state = 'failed', error = failed -> (batch -> r.key::text ->> 1) ->> 0,
			   sqlstate = failed -> (batch -> r.key::text ->> 1) ->> 1, attempts = attempts + 1,
			   request_id = NULL, request_hash = batch -> r.key::text ->> 1,
			   inputs_hash = batch -> r.key::text ->> 0, definition_hash = d.definition_hash
		 WHERE r.ctid = ANY (ARRAY(SELECT x.t FROM unnest(ctids, rhashes) x(t, rh) WHERE failed ? x.rh));
	END IF;

	-- rows answered by a kept result
	SELECT coalesce(array_agg(x.k), '{}'), coalesce(array_agg(x.h), '{}')
	  INTO cached_keys, cached_hashes
	  FROM unnest(keys, hashes, rhashes) x(k, h, rh)
	 WHERE known -> x.rh ->> 'state' = 'done' AND (known -> x.rh ->> 'fresh')::boolean;
	IF array_length(cached_keys, 1) > 0 THEN
		FOR i IN 1 .. array_length(cached_keys, 1) LOOP
			PERFORM queryclaw.enrichment_apply_rows(d,
				(SELECT c.result FROM queryclaw.enrichment_calls c
				  WHERE c.enrichment = d.id
					AND c.request_hash = batch -> cached_keys[i]::text ->> 1),
				ARRAY[cached_keys[i]], ARRAY[cached_hashes[i]]);
		END LOOP;
	END IF;

	UPDATE queryclaw.enrichment_definitions e
	   SET calls = e.calls + made,
		   -- rows that a call asked for another row answered, or a kept result
		   calls_saved = e.calls_saved - made + coalesce(array_length(cached_keys, 1), 0)
			   + (SELECT count(*) FROM unnest(rhashes) x(rh) WHERE asked ? x.rh),
		   last_error = coalesce(failed_errors[array_length(failed_errors, 1)], e.last_error)
	 WHERE e.id = d.id;
	RETURN array_length(keys, 1);
END
$$;

-- The enrichment's final requests leave queryclaw.requests once half the
-- cap of them is there (a small enrichment's stay, for whoever looks, as
-- any request's until async_retention), and calls that keep nothing go.
-- Each statement reads only the calls it changes (the final ones, through
-- enrichment_calls_final_idx; the expired ones, oldest first, through
-- enrichment_calls_expiry_idx): the calls kept for cache_ttl grow with the
-- table, and a walk of them at every turn made a backfill slower as it
-- went.
CREATE FUNCTION queryclaw.enrichment_tidy(d queryclaw.enrichment_definitions)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	final bigint[];
	final_rows tid[];
	spent_rows tid[];
	expired tid[];
BEGIN
	-- The calls whose requests are final, and the row versions read: the
	-- statements below find them again by those (a TID scan).  Found by
	-- enrichment_calls_final_idx, each walked every entry the calls
	-- taken out of it since the last VACUUM left there: 50 ms a turn
	-- 100,000 rows into a backfill, two thirds of the feed's time.
	SELECT array_agg(c.request_id), array_agg(c.ctid), array_agg(c.ctid) FILTER (WHERE c.state = 'spent')
	  INTO final, final_rows, spent_rows
	  FROM (SELECT c.request_id, c.ctid, c.state FROM queryclaw.enrichment_calls c
			 WHERE c.enrichment = d.id AND c.state <> 'running' AND c.request_id IS NOT NULL
			 LIMIT 4 * queryclaw.enrichment_in_flight_cap()) c;
	IF coalesce(array_length(final, 1), 0) >= queryclaw.enrichment_in_flight_cap() / 2 THEN
		PERFORM queryclaw.enrichment_purge(final);
		-- (a call asked again meanwhile is a new row version, and is left)
		DELETE FROM queryclaw.enrichment_calls c
		 WHERE c.ctid = ANY (spent_rows) AND c.state = 'spent' AND c.request_id IS NOT NULL;
		UPDATE queryclaw.enrichment_calls c SET request_id = NULL
		 WHERE c.ctid = ANY (final_rows) AND c.state <> 'running' AND c.request_id IS NOT NULL;
	END IF;
	expired := ARRAY(SELECT c.ctid FROM queryclaw.enrichment_calls c
					  WHERE c.enrichment = d.id AND c.state = 'done' AND c.expires_at < now()
						AND c.request_id IS NULL
					  ORDER BY c.expires_at LIMIT queryclaw.enrichment_in_flight_cap());
	IF array_length(expired, 1) > 0 THEN
		DELETE FROM queryclaw.enrichment_calls c WHERE c.ctid = ANY (expired);
	END IF;
END
$$;

-- Run by the enrichment worker as the enrichment's owner (a role's session,
-- as a callback is), whenever it may have stale rows: walk the backfill
-- on, ask what is stale, up to the cap of requests in flight.  A row
-- whose request expression raises is failed alone.
CREATE FUNCTION queryclaw.enrichment_feed(enrichment bigint)
RETURNS integer
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	d queryclaw.enrichment_definitions;
	room integer;
	k jsonb;
	handled integer := 0;
	err_code text;
	err_text text;
BEGIN
	SELECT * INTO d FROM queryclaw.enrichment_definitions e WHERE e.id = enrichment;
	IF NOT FOUND OR d.paused THEN
		RETURN 0;
	END IF;
	PERFORM queryclaw.enrichment_citus_share(d);
	PERFORM queryclaw.enrichment_tidy(d);
	room := queryclaw.enrichment_in_flight_cap() -
		(SELECT count(*) FROM queryclaw.enrichment_calls c
		  WHERE c.enrichment = d.id AND c.state = 'running');
	-- top the window up a quarter of it at a time: each turn asks hundreds
	-- of rows, so that its fixed cost is shared between them, and commits
	-- them while the three quarters still queued keep the async workers
	-- busy (the enrichment worker comes back at once while a turn asked
	-- a whole quarter)
	IF room < queryclaw.enrichment_in_flight_cap() / 4 THEN
		RETURN 0;
	END IF;
	room := queryclaw.enrichment_in_flight_cap() / 4;
	IF NOT d.backfill_done THEN
		PERFORM queryclaw.enrichment_walk(d, room);
	END IF;
	BEGIN
		RETURN queryclaw.enrichment_ask(d, room);
	EXCEPTION WHEN OTHERS THEN
		-- a row's request raised: ask row by row, failing those that raise
		NULL;
	END;
	FOR k IN SELECT r.key FROM queryclaw.enrichment_rows r
			  WHERE r.enrichment = d.id AND r.state = 'stale' ORDER BY r.key DESC LIMIT room LOOP
		BEGIN
			handled := handled + queryclaw.enrichment_ask(d, 1, k);
		EXCEPTION WHEN OTHERS THEN
			err_code := SQLSTATE;
			err_text := SQLERRM;
			UPDATE queryclaw.enrichment_rows r
			   SET state = 'failed', error = err_text, sqlstate = err_code, attempts = attempts + 1
			 WHERE r.enrichment = d.id AND r.key = k;
			UPDATE queryclaw.enrichment_definitions SET last_error = err_text WHERE id = d.id;
			handled := handled + 1;
		END;
	END LOOP;
	RETURN handled;
END
$$;

-- The callback of every request an enrichment queues, run as its owner
-- in the transaction that records the request's final state: the rows
-- that wait for it are written (or failed, or stale again).
CREATE FUNCTION queryclaw.enrichment_done(id bigint, result jsonb, error text, context jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	d queryclaw.enrichment_definitions;
	rhash text := context ->> 'request_hash';
	failure text := error;
	code text;
BEGIN
	-- Its rows are found by the request's id alone (unique: a request is
	-- one enrichment's), through enrichment_rows_request_idx: with the
	-- enrichment named too, the planner could take the primary key and
	-- walk every row of an enrichment it believes small.
	SELECT * INTO d FROM queryclaw.enrichment_definitions e
	 WHERE e.id = (context ->> 'enrichment_id')::bigint;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	IF failure IS NOT NULL OR enrichment_done.result ->> 'ok' = 'false' THEN
		-- nothing to keep: a row asking the same later asks anew (the
		-- call stays, spent, until its request leaves queryclaw.requests)
		UPDATE queryclaw.enrichment_calls c SET state = 'spent', result = NULL, expires_at = NULL
		 WHERE c.enrichment = d.id AND c.request_hash = rhash AND c.request_id = enrichment_done.id;
	END IF;
	IF failure = 'cancelled' THEN
		-- cancelled by hand (or its rows deleted): what waited for it is asked again
		UPDATE queryclaw.enrichment_rows r SET state = 'stale', request_id = NULL
		 WHERE r.request_id = enrichment_done.id AND r.state = 'running';
		RETURN;
	END IF;
	IF failure IS NULL AND enrichment_done.result ->> 'ok' = 'false' THEN
		failure := format('HTTP %s from %s', enrichment_done.result ->> 'status',
						  enrichment_done.result ->> 'url');
	END IF;
	IF failure IS NOT NULL THEN
		SELECT q.sqlstate INTO code FROM queryclaw.requests q WHERE q.id = enrichment_done.id;
		UPDATE queryclaw.enrichment_rows r
		   SET state = 'failed', error = failure, sqlstate = code, request_id = NULL,
			   attempts = attempts + 1
		 WHERE r.request_id = enrichment_done.id AND r.state = 'running';
		UPDATE queryclaw.enrichment_definitions e SET last_error = failure WHERE e.id = d.id;
		RETURN;
	END IF;
	PERFORM queryclaw.enrichment_keep(d, ARRAY[enrichment_done.id], ARRAY[enrichment_done.result],
									  ARRAY[rhash]);
	PERFORM queryclaw.enrichment_write(d, ARRAY[enrichment_done.id], ARRAY[enrichment_done.result]);
END
$$;

-- The results of d's requests ids, answered: each call keeps its result
-- for cache_ttl (hashes: the requests' hashes), and the tokens they cost
-- are counted.
CREATE FUNCTION queryclaw.enrichment_keep(d queryclaw.enrichment_definitions, ids bigint[],
										  results jsonb[], hashes text[])
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	-- one call at a time, each by the primary key: without statistics of
	-- the enrichment column (on purpose), a statement for them all walks
	-- every call of the enrichment
	FOR i IN 1 .. coalesce(array_length(ids, 1), 0) LOOP
		UPDATE queryclaw.enrichment_calls c
		   SET state = CASE WHEN d.cache_ttl > interval '0' THEN 'done' ELSE 'spent' END,
			   result = CASE WHEN d.cache_ttl > interval '0' THEN results[i] END,
			   expires_at = CASE WHEN d.cache_ttl > interval '0' THEN now() + d.cache_ttl END
		 WHERE c.enrichment = d.id AND c.request_hash = hashes[i] AND c.request_id = ids[i];
	END LOOP;
	UPDATE queryclaw.enrichment_definitions e
	   SET tokens = tokens + t.n
	  FROM (SELECT sum((r #>> '{usage,total_tokens}')::bigint) AS n FROM unnest(results) r) t
	 WHERE e.id = d.id AND t.n IS NOT NULL;
END
$$;

-- Write the results of d's requests ids into every row waiting for them,
-- in one statement; when apply raises, request by request, then row by
-- row, failing those that raise.
CREATE FUNCTION queryclaw.enrichment_write(d queryclaw.enrichment_definitions, ids bigint[],
										   results jsonb[])
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	keys jsonb[];
	hashes text[];
BEGIN
	BEGIN
		EXECUTE format('SELECT queryclaw.%I($1, $2, true)', 'enrichment_' || d.id || '_apply_request')
			USING results, ids;
		RETURN;
	EXCEPTION WHEN OTHERS THEN
		IF array_length(ids, 1) > 1 THEN
			FOR i IN 1 .. array_length(ids, 1) LOOP
				PERFORM queryclaw.enrichment_write(d, ARRAY[ids[i]], ARRAY[results[i]]);
			END LOOP;
			RETURN;
		END IF;
	END;
	SELECT array_agg(r.key), array_agg(r.inputs_hash) INTO keys, hashes
	  FROM queryclaw.enrichment_rows r
	 WHERE r.request_id = ids[1] AND r.state = 'running';
	PERFORM queryclaw.enrichment_apply_rows(d, results[1], keys, hashes);
END
$$;

-- What the callback workers call instead of enrichment_done for a batch
-- of a role's requests (ids, with their results, errors and contexts, as
-- each callback would be given them), in one transaction: the answered
-- requests of each enrichment are written back together, the rest one by
-- one as enrichment_done does.
CREATE FUNCTION queryclaw.enrichment_done_many(ids bigint[], results jsonb[], errors text[],
											   contexts jsonb[])
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	d queryclaw.enrichment_definitions;
	answered record;
BEGIN
	FOR answered IN
		SELECT (x.context ->> 'enrichment_id')::bigint AS enrichment, array_agg(x.id) AS ids,
			   array_agg(x.result) AS results, array_agg(x.context ->> 'request_hash') AS hashes
		  FROM ROWS FROM (unnest(ids), unnest(results), unnest(errors), unnest(contexts))
			   x(id, result, error, context)
		 WHERE x.error IS NULL AND x.result ->> 'ok' IS DISTINCT FROM 'false'
		 GROUP BY 1
	LOOP
		SELECT * INTO d FROM queryclaw.enrichment_definitions e WHERE e.id = answered.enrichment;
		CONTINUE WHEN NOT FOUND;
		PERFORM queryclaw.enrichment_keep(d, answered.ids, answered.results, answered.hashes);
		PERFORM queryclaw.enrichment_write(d, answered.ids, answered.results);
	END LOOP;
	PERFORM queryclaw.enrichment_done(x.id, x.result, x.error, x.context)
	   FROM ROWS FROM (unnest(ids), unnest(results), unnest(errors), unnest(contexts))
			x(id, result, error, context)
	  WHERE x.error IS NOT NULL OR x.result ->> 'ok' = 'false';
END
$$;

-- An enrichment's rows by state.  stale counts the rows the backfill has
-- not reached yet too; rows counts the source table now (NULL for a
-- reader who may not read it: queryclaw_admin sees every enrichment).
CREATE FUNCTION queryclaw.enrichment_counts(d queryclaw.enrichment_definitions,
											OUT rows bigint, OUT done bigint, OUT stale bigint,
											OUT running bigint, OUT failed bigint,
											OUT skipped bigint, OUT per_second float8,
											OUT calls bigint, OUT calls_saved bigint,
											OUT tokens bigint, OUT last_error text)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	seen bigint;
	all_walked boolean := d.backfill_done;
BEGIN
	-- queryclaw_admin sees every enrichment, not always its table
	IF has_table_privilege(d.source, 'SELECT') THEN
		EXECUTE format('SELECT count(*) FROM %s', d.source) INTO rows;
	END IF;
	SELECT count(*) FILTER (WHERE r.state = 'done'), count(*) FILTER (WHERE r.state = 'stale'),
		   count(*) FILTER (WHERE r.state = 'running'), count(*) FILTER (WHERE r.state = 'failed'),
		   count(*) FILTER (WHERE r.state = 'skipped'), count(*),
		   count(*) FILTER (WHERE r.enriched_at > now() - interval '1 minute')
			   / greatest(extract(epoch FROM now() - min(r.enriched_at)
											 FILTER (WHERE r.enriched_at > now() - interval '1 minute')), 1)
	  INTO done, stale, running, failed, skipped, seen, per_second
	  FROM queryclaw.enrichment_rows r
	 WHERE r.enrichment = d.id;
	calls := d.calls;
	calls_saved := d.calls_saved;
	tokens := d.tokens;
	last_error := d.last_error;
	IF d.citus IS NOT NULL AND queryclaw.enrichment_citus_node(d.source) = 'coordinator' THEN
		-- the workers' rows and counters, added to this node's
		SELECT done + coalesce(sum((n ->> 'done')::bigint), 0), stale + coalesce(sum((n ->> 'stale')::bigint), 0),
			   running + coalesce(sum((n ->> 'running')::bigint), 0), failed + coalesce(sum((n ->> 'failed')::bigint), 0),
			   skipped + coalesce(sum((n ->> 'skipped')::bigint), 0), seen + coalesce(sum((n ->> 'seen')::bigint), 0),
			   per_second + coalesce(sum((n ->> 'per_second')::float8), 0), calls + coalesce(sum((n ->> 'calls')::bigint), 0),
			   calls_saved + coalesce(sum((n ->> 'calls_saved')::bigint), 0), tokens + coalesce(sum((n ->> 'tokens')::bigint), 0),
			   coalesce(last_error, max(n ->> 'last_error')),
			   all_walked AND (d.citus ->> 'shared')::boolean AND bool_and((n ->> 'walked')::boolean)
		  INTO done, stale, running, failed, skipped, seen, per_second, calls, calls_saved, tokens,
			   last_error, all_walked
		  FROM queryclaw.enrichment_citus_node_counts(d) n;
	END IF;
	IF NOT all_walked THEN
		stale := stale + greatest(coalesce(rows, seen) - seen, 0);
	END IF;
END
$$;

CREATE VIEW queryclaw.enrichments WITH (security_invoker = true) AS
	SELECT d.name, d.owner, d.source, d.mode, d.paused, c.rows, c.done, c.stale, c.running,
		   c.failed, c.skipped, c.calls, c.calls_saved, c.tokens, c.last_error,
		   CASE WHEN c.per_second > 0 AND c.stale + c.running > 0
				THEN (c.stale + c.running) / c.per_second * interval '1 second' END AS eta
	  FROM queryclaw.enrichment_definitions d
	 CROSS JOIN LATERAL queryclaw.enrichment_counts(d) c;
GRANT SELECT ON queryclaw.enrichments TO PUBLIC;
COMMENT ON VIEW queryclaw.enrichments IS
'Each enrichment you own (queryclaw_admin: all): its rows by state (stale: waiting to be asked, the backfill''s rows not reached yet included), the calls made and saved (rows answered by a call another row made, or by a kept result), tokens, the last error, and an estimate of the time left from the last minute''s pace (NULL when nothing completes).';

CREATE FUNCTION queryclaw.estimate_enrichment(name text,
											  OUT rows bigint, OUT distinct_requests bigint,
											  OUT prompt_chars bigint, OUT tokens_estimate bigint)
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	d queryclaw.enrichment_definitions := queryclaw.enrichment_find(name);
BEGIN
	-- every row's request, built and checked, nothing sent
	EXECUTE format($q$
		WITH a AS (SELECT v.qc_request FROM queryclaw.%I v),
		u AS (SELECT DISTINCT ON (md5(a.qc_request::text)) a.qc_request FROM a
			   WHERE a.qc_request IS NOT NULL)
		SELECT (SELECT count(*) FROM a), (SELECT count(*) FROM u),
			   (SELECT coalesce(sum(length(coalesce(u.qc_request ->> 'prompt', '')
										   || coalesce(u.qc_request ->> 'system', '')
										   || coalesce(u.qc_request ->> 'input', ''))), 0) FROM u)$q$,
		'enrichment_' || d.id || '_request')
		INTO rows, distinct_requests, prompt_chars;
	-- about four characters a token, as providers' tokenizers average for English
	tokens_estimate := ceil(prompt_chars / 4.0);
END
$$;
COMMENT ON FUNCTION queryclaw.estimate_enrichment(text) IS
'Before a backfill: the source''s rows, how many distinct requests they make (the calls a backfill would make), the characters of their prompts and inputs, and the tokens that is (about four characters a token); nothing is asked.';
REVOKE ALL ON FUNCTION queryclaw.estimate_enrichment(text) FROM PUBLIC;

-- An enrichment whose source table is dropped (with CASCADE, which its
-- view and write-back function need), or whose objects are dropped with
-- everything its owner owns, goes with them.
CREATE FUNCTION queryclaw.enrichment_on_sql_drop()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	-- its table, or its view (DROP OWNED BY its owner)
	DELETE FROM queryclaw.enrichment_definitions d
	 USING pg_event_trigger_dropped_objects() o
	 WHERE o.classid = 'pg_class'::regclass AND o.objsubid = 0
	   AND (o.objid = d.source::oid
			OR (o.schema_name = 'queryclaw' AND o.object_name = 'enrichment_' || d.id || '_request'));
END
$$;
CREATE EVENT TRIGGER queryclaw_enrichment_sql_drop ON sql_drop
	WHEN TAG IN ('DROP TABLE', 'DROP SCHEMA', 'DROP OWNED')
	EXECUTE FUNCTION queryclaw.enrichment_on_sql_drop();

-- What each internal function is for (every function has a comment).
COMMENT ON FUNCTION queryclaw.enrichment_apply_rows(queryclaw.enrichment_definitions, jsonb, jsonb[], text[]) IS
'Internal to enrichments: write a result into the rows that asked for it, through the enrichment''s apply.';
COMMENT ON FUNCTION queryclaw.enrichment_ask(queryclaw.enrichment_definitions, integer, jsonb) IS
'Internal to enrichments: queue the requests of stale rows, one call for identical requests.';
COMMENT ON FUNCTION queryclaw.enrichment_build(queryclaw.enrichment_definitions) IS
'Internal to enrichments: make an enrichment''s view, write-back and triggers from its definition.';
COMMENT ON FUNCTION queryclaw.enrichment_cancel(bigint[], regrole) IS
'Internal to enrichments: cancel requests of an enrichment''s owner (its own, or from its triggers).';
COMMENT ON FUNCTION queryclaw.enrichment_counts(queryclaw.enrichment_definitions) IS
'Internal to enrichments: an enrichment''s rows by state, for queryclaw.enrichments.';
COMMENT ON FUNCTION queryclaw.enrichment_define(bigint) IS
'Internal to enrichments: check a definition''s texts and make its view and write-back function; returns its inputs.';
COMMENT ON FUNCTION queryclaw.enrichment_done(bigint, jsonb, text, jsonb) IS
'Internal to enrichments: the callback of every request an enrichment queues.';
COMMENT ON FUNCTION queryclaw.enrichment_done_many(bigint[], jsonb[], text[], jsonb[]) IS
'Internal to enrichments: enrichment_done for a batch of requests, the answered ones written back together.';
COMMENT ON FUNCTION queryclaw.enrichment_keep(queryclaw.enrichment_definitions, bigint[], jsonb[], text[]) IS
'Internal to enrichments: keep answered requests'' results for cache_ttl and count their tokens.';
COMMENT ON FUNCTION queryclaw.enrichment_write(queryclaw.enrichment_definitions, bigint[], jsonb[]) IS
'Internal to enrichments: write answered requests'' results into their rows through the enrichment''s apply.';
COMMENT ON FUNCTION queryclaw.enrichment_embed_async(text, text, regprocedure, jsonb) IS
'Internal to enrichments: queue an embedding request as the enrichment''s owner.';
COMMENT ON FUNCTION queryclaw.enrichment_enqueue(queryclaw.enrichment_definitions, jsonb, text) IS
'Internal to enrichments: queue one request as the enrichment''s owner.';
COMMENT ON FUNCTION queryclaw.enrichment_feed(bigint) IS
'Internal to enrichments: walk the backfill on and ask what is stale; run by the enrichment worker as the owner.';
COMMENT ON FUNCTION queryclaw.enrichment_find(text) IS
'Internal to enrichments: the calling role''s enrichment of that name.';
COMMENT ON FUNCTION queryclaw.enrichment_for_trigger(text, oid) IS
'Internal to enrichments: the live enrichment a trigger on its source fires for.';
COMMENT ON FUNCTION queryclaw.enrichment_forget(queryclaw.enrichment_definitions, jsonb[]) IS
'Internal to enrichments: forget rows gone from the source, cancelling what only they waited for.';
COMMENT ON FUNCTION queryclaw.enrichment_me() IS
'Internal to enrichments: the calling role''s OID, for the tables'' row-level security.';
COMMENT ON FUNCTION queryclaw.enrichment_mine(bigint) IS
'Internal to enrichments: whether the calling role owns that enrichment.';
COMMENT ON FUNCTION queryclaw.enrichment_in_flight_cap() IS
'Internal to enrichments: how many of an enrichment''s requests may be unfinished at once.';
COMMENT ON FUNCTION queryclaw.enrichment_key_expression(name[], text) IS
'Internal to enrichments: the SQL that builds a row''s key as enrichment_rows keeps it.';
COMMENT ON FUNCTION queryclaw.enrichment_on_delete() IS
'Internal to enrichments: the trigger that forgets deleted rows.';
COMMENT ON FUNCTION queryclaw.enrichment_on_insert() IS
'Internal to enrichments: the trigger that makes inserted rows stale.';
COMMENT ON FUNCTION queryclaw.enrichment_on_sql_drop() IS
'Internal to enrichments: drops the enrichments of a dropped table.';
COMMENT ON FUNCTION queryclaw.enrichment_on_update() IS
'Internal to enrichments: the trigger that makes a row stale when an input changes.';
COMMENT ON FUNCTION queryclaw.enrichment_purge(bigint[]) IS
'Internal to enrichments: delete the calling role''s final requests among ids, once their results were written.';
COMMENT ON FUNCTION queryclaw.enrichment_tidy(queryclaw.enrichment_definitions) IS
'Internal to enrichments: delete an enrichment''s final requests once half its cap of them are kept, and the calls that keep nothing.';
COMMENT ON FUNCTION queryclaw.enrichment_triggers_drop(queryclaw.enrichment_definitions) IS
'Internal to enrichments: drop an enrichment''s triggers.';
COMMENT ON FUNCTION queryclaw.enrichment_triggers_make(queryclaw.enrichment_definitions) IS
'Internal to enrichments: make a live enrichment''s triggers.';
COMMENT ON FUNCTION queryclaw.enrichment_undefine(bigint) IS
'Internal to enrichments: drop an enrichment''s view and write-back function.';
COMMENT ON FUNCTION queryclaw.enrichment_wake() IS
'Internal to enrichments: wake the enrichment worker when the transaction commits.';
COMMENT ON FUNCTION queryclaw.enrichment_walk(queryclaw.enrichment_definitions, integer) IS
'Internal to enrichments: the next piece of the backfill.';
--
-- Enrichments of distributed Citus tables (docs/citus.md, "Enrichments"):
-- each row asked on its shard's node, its state beside it.
--
-- create_enrichment on the coordinator makes the enrichment there, and its
-- triggers, which Citus copies onto every shard; once that has committed,
-- the coordinator's feeder gives it to every worker, with the same id
-- (enrichment_citus_share, then enrichment_citus_accept there, as the
-- owner): each worker makes its own view and write-back, walks the rows of
-- its own shards for the backfill, and keeps their states in its own
-- enrichment_rows, filled by the shards' triggers.  Its workers ask
-- for them and write the results back through Citus (enrichcitus.c makes
-- the write-back Citus routes to the row's shard).  pause, resume, retry
-- and drop on the coordinator reach the workers' copies at commit, refresh
-- at once, alter once it has committed (as the creation); queryclaw.
-- enrichments on the coordinator adds up every node's rows.  A reference
-- or Citus local table's enrichment runs on the coordinator alone, from its
-- copy of the rows (the same walk of this node's shards, the same
-- write-back through Citus).
--
-- citus: NULL for an enrichment of any other table; for a distributed
-- table's, whether the workers have it ({"shared": false} with the
-- creator's search_path until the coordinator has given it to them).
ALTER TABLE queryclaw.enrichment_definitions ADD COLUMN citus jsonb;
COMMENT ON COLUMN queryclaw.enrichment_definitions.citus IS
'For an enrichment of a distributed Citus table: whether the workers have it yet (shared).';

CREATE FUNCTION queryclaw.enrichment_citus_node(source regclass)
RETURNS text
AS 'MODULE_PATHNAME', 'enrichment_citus_node'
LANGUAGE C STRICT STABLE PARALLEL SAFE;
COMMENT ON FUNCTION queryclaw.enrichment_citus_node(regclass) IS
'Internal to enrichments: NULL unless the table is distributed by Citus; then whether this node is its coordinator or a worker.';

-- Run a PL/pgSQL statement on every worker as the calling role (SET LOCAL
-- ROLE there), now or just before this transaction commits: no more than
-- the role could do with run_command_on_workers.
CREATE FUNCTION queryclaw.enrichment_citus_run(plpgsql text, at_commit boolean)
RETURNS void
AS 'MODULE_PATHNAME', 'enrichment_citus_run'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.enrichment_citus_run(text, boolean) IS
'Internal to enrichments: run a statement on every Citus worker as the calling role, now or when the transaction commits.';

-- The table a trigger fires for: a shard's table (named <table>_<shard
-- id> by Citus), else relid itself.  The shard's name is read from its
-- regclass, not pg_class, where Citus hides shards from a user's session.
CREATE FUNCTION queryclaw.enrichment_citus_table(relid oid)
RETURNS oid
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	name text;
	logical oid;
BEGIN
	IF to_regclass('pg_catalog.pg_dist_shard') IS NULL THEN
		RETURN relid;			-- no Citus: what a trigger costs stays as it was
	END IF;
	name := relid::regclass::text;		-- qualified, with only pg_catalog on the path
	IF name !~ '_\d{1,18}"?$' THEN
		RETURN relid;
	END IF;
	EXECUTE 'SELECT s.logicalrelid FROM pg_catalog.pg_dist_shard s
			  WHERE s.shardid = $1 AND pg_catalog.shard_name(s.logicalrelid, s.shardid, false) = $2'
		INTO logical USING substring(name FROM '_(\d{1,18})"?$')::bigint, name;
	RETURN coalesce(logical, relid);
END
$$;
COMMENT ON FUNCTION queryclaw.enrichment_citus_table(oid) IS
'Internal to enrichments: the distributed table of a shard a trigger fires on (else the table itself).';

-- Whether this node makes and drops d's triggers: a worker does not for a
-- distributed table (Citus copies the coordinator's onto the shards, and
-- refuses them on a worker); the coordinator lets Citus make them on a
-- Citus table (a trigger on a distributed or reference table needs
-- citus.enable_unsafe_triggers).
CREATE FUNCTION queryclaw.enrichment_citus_triggers(d queryclaw.enrichment_definitions)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	IF queryclaw.enrichment_citus_node(d.source) = 'worker' THEN
		RETURN false;
	ELSIF d.citus IS NOT NULL OR queryclaw.enrichment_citus_node(d.source) = 'coordinator' THEN
		PERFORM set_config('citus.enable_unsafe_triggers', 'on', true);
	END IF;
	RETURN true;
END
$$;
COMMENT ON FUNCTION queryclaw.enrichment_citus_triggers(queryclaw.enrichment_definitions) IS
'Internal to enrichments: whether this node makes an enrichment''s triggers (not a Citus worker, for a distributed table).';

-- The citus column of a new enrichment of source: NULL unless Citus
-- manages source; made on the coordinator alone.  A reference or Citus
-- local table is enriched there from its own copy, which it needs.
CREATE FUNCTION queryclaw.enrichment_citus_new(source regclass)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	node text := queryclaw.enrichment_citus_node(source);
	managed boolean := false;
	here boolean;
BEGIN
	IF node IS NULL AND pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
		EXECUTE 'SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid OPERATOR(pg_catalog.=) $1),
						pg_catalog.citus_is_coordinator()'
			INTO managed, here USING source;
		node := CASE WHEN NOT managed THEN NULL WHEN here THEN 'coordinator' ELSE 'worker' END;
	END IF;
	IF node = 'worker' THEN
		RAISE EXCEPTION 'an enrichment of a Citus table is made on the coordinator'
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = pg_catalog.format('Table %s is managed by Citus; this node is a worker.', source),
				  HINT = 'Call create_enrichment on the coordinator.';
	ELSIF node IS NULL THEN
		RETURN NULL;
	ELSIF managed THEN
		-- its rows are asked and written on the coordinator, from its copy
		IF pg_catalog.cardinality(queryclaw.enrichment_citus_shards(source)) = 0 THEN
			RAISE EXCEPTION 'the coordinator has no copy of table %', source
				USING ERRCODE = 'feature_not_supported',
					  DETAIL = 'An enrichment of a reference table is run on the coordinator, from the coordinator''s copy of its rows.',
					  HINT = 'Register the coordinator in Citus''s metadata (citus_set_coordinator_host): Citus then gives it a copy of every reference table.';
		END IF;
		RETURN '{"shared": true}';
	END IF;
	-- the workers resolve the request's names as the creator's session did
	RETURN pg_catalog.jsonb_build_object('shared', false,
										 'search_path', pg_catalog.current_setting('search_path'));
END
$$;
COMMENT ON FUNCTION queryclaw.enrichment_citus_new(regclass) IS
'Internal to enrichments: how a new enrichment of a Citus table starts (on the coordinator only).';

-- What cannot be done here for d: refused.  An enrichment made before its
-- table was distributed is not on the workers (drop it and create it
-- again); one of a distributed table is changed on the coordinator, which
-- changes the workers' copies.
CREATE FUNCTION queryclaw.enrichment_citus_refuse(d queryclaw.enrichment_definitions, what text)
RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	node text := queryclaw.enrichment_citus_node(d.source);
BEGIN
	IF d.citus IS NULL AND node IS NOT NULL THEN
		RAISE EXCEPTION '% of an enrichment made before its table was distributed is not supported', what
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = format('Table %s was distributed by Citus after the enrichment was made: its rows are on the workers, which do not have it.', d.source),
				  HINT = 'Drop the enrichment and create it again (its rows are asked again).';
	ELSIF node = 'worker' THEN
		RAISE EXCEPTION '% of an enrichment of a distributed table is done on the coordinator', what
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = format('Table %s is distributed by Citus; this node is a worker.', d.source),
				  HINT = 'Call it on the coordinator: it changes every worker''s copy.';
	END IF;
END
$$;
COMMENT ON FUNCTION queryclaw.enrichment_citus_refuse(queryclaw.enrichment_definitions, text) IS
'Internal to enrichments: refuses what cannot be done on this node for an enrichment of a distributed Citus table.';

-- On the coordinator, once alter_enrichment has changed d: the workers are
-- given its new definition once this commits, as at its creation.
CREATE FUNCTION queryclaw.enrichment_citus_altered(d queryclaw.enrichment_definitions, reenrich boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	IF queryclaw.enrichment_citus_node(d.source) OPERATOR(pg_catalog.=) 'coordinator' AND d.citus IS NOT NULL THEN
		UPDATE queryclaw.enrichment_definitions e
		   SET citus = pg_catalog.jsonb_build_object('shared', false, 'reenrich', reenrich,
													 'search_path', pg_catalog.current_setting('search_path'))
		 WHERE e.id OPERATOR(pg_catalog.=) d.id;
	END IF;
END
$$;
COMMENT ON FUNCTION queryclaw.enrichment_citus_altered(queryclaw.enrichment_definitions, boolean) IS
'Internal to enrichments: give the Citus workers an enrichment''s new definition once alter_enrichment commits.';

-- On the coordinator, tell the workers' copies of d: at commit, as the
-- owner.  Returns, for a retry, how many of the workers' rows are failed
-- now (those it puts back), else 0.
CREATE FUNCTION queryclaw.enrichment_citus_tell(d queryclaw.enrichment_definitions, action text)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	IF d.citus IS NULL OR queryclaw.enrichment_citus_node(d.source) IS DISTINCT FROM 'coordinator' THEN
		RETURN 0;
	END IF;
	PERFORM queryclaw.enrichment_citus_run(
		format('PERFORM queryclaw.enrichment_citus_on_worker(%s, %L)', d.id, action), true);
	IF action = 'retry' THEN
		RETURN (SELECT coalesce(sum((n ->> 'failed')::bigint), 0)
				  FROM queryclaw.enrichment_citus_node_counts(d) n);
	END IF;
	RETURN 0;
END
$$;
COMMENT ON FUNCTION queryclaw.enrichment_citus_tell(queryclaw.enrichment_definitions, text) IS
'Internal to enrichments: pause, resume, retry or drop the workers'' copies of an enrichment when the transaction commits.';

-- On the coordinator, refresh_enrichment of d on every worker, now, as the
-- caller (each worker's refresh commits on its own: it only makes rows
-- stale); how many rows they made stale.  Nothing before the workers have
-- d: their backfill walks every row then.
CREATE FUNCTION queryclaw.enrichment_citus_refresh(d queryclaw.enrichment_definitions)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	made bigint;
	failure text;
BEGIN
	IF (d.citus ->> 'shared')::boolean IS DISTINCT FROM true
		OR queryclaw.enrichment_citus_node(d.source) IS DISTINCT FROM 'coordinator' THEN
		RETURN 0;
	END IF;
	SELECT sum(w.result::bigint) FILTER (WHERE w.success),
		   min(w.nodename || ':' || w.nodeport || ': ' || w.result) FILTER (WHERE NOT w.success)
	  INTO made, failure
	  FROM run_command_on_workers(format('SELECT queryclaw.refresh_enrichment(%L)', d.name)) w;
	IF failure IS NOT NULL THEN
		RAISE EXCEPTION 'could not refresh enrichment "%" on worker %', d.name, failure
			USING ERRCODE = 'connection_failure',
				  HINT = 'The workers that answered have made their rows stale; call it again.';
	END IF;
	RETURN coalesce(made, 0);
END
$$;
COMMENT ON FUNCTION queryclaw.enrichment_citus_refresh(queryclaw.enrichment_definitions) IS
'Internal to enrichments: refresh_enrichment of an enrichment of a distributed Citus table on every worker.';

-- On a worker: the caller's copy of enrichment id paused, resumed, retried
-- or dropped (nothing if it has none yet: it gets it as it is then).
CREATE FUNCTION queryclaw.enrichment_citus_on_worker(id bigint, action text)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	d queryclaw.enrichment_definitions;
BEGIN
	SELECT * INTO d FROM queryclaw.enrichment_definitions e
	 WHERE e.id = enrichment_citus_on_worker.id AND e.owner = queryclaw.enrichment_me();
	IF NOT FOUND THEN
		RETURN;
	END IF;
	CASE action
	WHEN 'pause' THEN PERFORM queryclaw.pause_enrichment(d.name);
	WHEN 'resume' THEN PERFORM queryclaw.resume_enrichment(d.name);
	WHEN 'retry' THEN PERFORM queryclaw.retry_enrichment(d.name);
	WHEN 'drop' THEN PERFORM queryclaw.drop_enrichment(d.name);
	END CASE;
END
$$;
COMMENT ON FUNCTION queryclaw.enrichment_citus_on_worker(bigint, text) IS
'Internal to enrichments: on a Citus worker, pause, resume, retry or drop its copy of an enrichment.';

-- Run by the coordinator's feeder as the owner, once create_enrichment has
-- committed: every worker gets its copy (made there as on the coordinator,
-- under the creator's search_path), then d is shared.
CREATE FUNCTION queryclaw.enrichment_citus_share(d queryclaw.enrichment_definitions)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	-- one feeder gives it; another waits for it, then finds it given
	PERFORM FROM queryclaw.enrichment_definitions e
	  WHERE e.id = d.id AND (e.citus ->> 'shared')::boolean = false FOR UPDATE;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	PERFORM queryclaw.enrichment_citus_run(format('PERFORM queryclaw.enrichment_citus_accept(%L)',
		jsonb_build_object('id', d.id, 'name', d.name, 'source', d.source::text,
						   'request', d.request, 'apply', d.apply, 'target', d.target,
						   'mode', d.mode, 'cache_ttl', d.cache_ttl, 'paused', d.paused,
						   'definition_hash', d.definition_hash, 'backfill_done', d.backfill_done,
						   'search_path', d.citus ->> 'search_path', 'reenrich', d.citus -> 'reenrich')), false);
	UPDATE queryclaw.enrichment_definitions e SET citus = '{"shared": true}' WHERE e.id = d.id;
END
$$;
COMMENT ON FUNCTION queryclaw.enrichment_citus_share(queryclaw.enrichment_definitions) IS
'Internal to enrichments: give every Citus worker its copy of an enrichment made on the coordinator.';

-- On a worker, as the owner: its copy of an enrichment made on the
-- coordinator (def, as enrichment_citus_share sends it), with the same id.
CREATE FUNCTION queryclaw.enrichment_citus_accept(def jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	d queryclaw.enrichment_definitions;
BEGIN
	IF (def ->> 'reenrich') IS NOT NULL THEN
		-- altered on the coordinator: the copy changed as alter_enrichment changes it
		UPDATE queryclaw.enrichment_definitions e
		   SET request = def ->> 'request', apply = def ->> 'apply', target = def ->> 'target',
			   definition_hash = def ->> 'definition_hash'
		 WHERE e.id = (def ->> 'id')::bigint AND e.owner = queryclaw.enrichment_me()
		RETURNING * INTO d;
		IF FOUND THEN
			IF (def ->> 'reenrich')::boolean THEN
				UPDATE queryclaw.enrichment_rows r SET state = 'stale', request_id = NULL
				 WHERE r.enrichment = d.id AND r.state <> 'stale';
			END IF;
			PERFORM set_config('search_path', def ->> 'search_path', true);
			PERFORM queryclaw.enrichment_build(d);
			PERFORM queryclaw.enrichment_wake();
			RETURN;
		END IF;
	END IF;
	INSERT INTO queryclaw.enrichment_definitions
		(id, name, owner, source, request, apply, target, mode, cache_ttl, paused, definition_hash,
		 key_columns, backfill_done, citus)
	OVERRIDING SYSTEM VALUE
	VALUES ((def ->> 'id')::bigint, def ->> 'name', queryclaw.enrichment_me(),
			(def ->> 'source')::regclass, def ->> 'request', def ->> 'apply', def ->> 'target',
			def ->> 'mode', (def ->> 'cache_ttl')::interval, (def ->> 'paused')::boolean,
			def ->> 'definition_hash', '{}', (def ->> 'backfill_done')::boolean, '{"shared": true}')
	ON CONFLICT (id) DO NOTHING
	RETURNING * INTO d;
	IF NOT FOUND THEN
		RETURN;					-- given before (the coordinator did not hear back)
	END IF;
	-- as create_enrichment checks it on the coordinator
	IF NOT has_table_privilege(d.source, 'SELECT') OR NOT has_table_privilege(d.source, 'UPDATE') THEN
		RAISE EXCEPTION 'permission denied for table %', d.source
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = 'An enrichment reads its source table and writes its results as its owner, who needs SELECT and UPDATE on it.';
	END IF;
	PERFORM set_config('search_path', def ->> 'search_path', true);
	PERFORM queryclaw.enrichment_build(d);
	PERFORM queryclaw.enrichment_wake();
END
$$;
COMMENT ON FUNCTION queryclaw.enrichment_citus_accept(jsonb) IS
'Internal to enrichments: on a Citus worker, make its copy of an enrichment made on the coordinator.';

-- This node's shards (placements) of a Citus table, qualified.
CREATE FUNCTION queryclaw.enrichment_citus_shards(source regclass)
RETURNS text[]
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	shards text[];
BEGIN
	EXECUTE 'SELECT array_agg(pg_catalog.shard_name(s.logicalrelid, s.shardid, false) ORDER BY s.shardid)
			   FROM pg_catalog.pg_dist_shard s JOIN pg_catalog.pg_dist_placement p ON p.shardid = s.shardid
			  WHERE s.logicalrelid = $1 AND p.groupid = (SELECT l.groupid FROM pg_catalog.pg_dist_local_group l)'
		INTO shards USING source;
	RETURN coalesce(shards, '{}');
END
$$;
COMMENT ON FUNCTION queryclaw.enrichment_citus_shards(regclass) IS
'Internal to enrichments: this node''s shards of a Citus table.';

-- What the backfill walks on this node for d: the rows of its shards
-- (their key and inputs' hash, as enrichment_<id>_inputs has them), read
-- from the shards themselves; NULL unless Citus manages d's table.
CREATE FUNCTION queryclaw.enrichment_citus_rows(d queryclaw.enrichment_definitions)
RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	keys text := (SELECT string_agg(quote_ident(k), ', ') FROM unnest(d.key_columns) k);
	hash text := format('pg_catalog.md5(ROW(%s)::pg_catalog.text) AS qc_inputs_hash',
						(SELECT string_agg(quote_ident(c), ', ') FROM unnest(d.input_columns) c));
	shards text[];
BEGIN
	IF d.citus IS NULL THEN
		RETURN NULL;
	END IF;
	shards := queryclaw.enrichment_citus_shards(d.source);
	IF cardinality(shards) = 0 THEN
		-- no shard here: nothing to walk
		RETURN format('(SELECT %s, NULL::pg_catalog.text AS qc_inputs_hash WHERE false)',
					  (SELECT string_agg(format('(NULL::%s).%I', d.source, k), ', ') FROM unnest(d.key_columns) k));
	END IF;
	RETURN '(' || (SELECT string_agg(format('SELECT %s, %s FROM %s', keys, hash, s), ' UNION ALL ')
					 FROM unnest(shards) s) || ')';
END
$$;
COMMENT ON FUNCTION queryclaw.enrichment_citus_rows(queryclaw.enrichment_definitions) IS
'Internal to enrichments: the rows of this node''s shards of a distributed table, for the backfill.';

-- enrichment_ask's batch for a distributed table: up to n stale rows of
-- this node (or one_key's), locked, each with its inputs' hash and request
-- read through Citus, which the list of their distribution column's values
-- prunes to this node's shards (NULLs for a row gone from the table).
CREATE FUNCTION queryclaw.enrichment_citus_pick(d queryclaw.enrichment_definitions, n integer,
												one_key jsonb,
												OUT keys jsonb[], OUT ctids tid[], OUT hashes text[],
												OUT requests jsonb[], OUT rhashes text[])
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	dist name;
	dist_type text;
	got_keys jsonb[];
	got_hashes text[];
	got_requests jsonb[];
BEGIN
	SELECT array_agg(s.key), array_agg(s.ctid) INTO keys, ctids
	  FROM (SELECT r.key, r.ctid FROM queryclaw.enrichment_rows r
			 WHERE r.enrichment = d.id AND r.state = 'stale' AND (one_key IS NULL OR r.key = one_key)
			 ORDER BY r.key DESC LIMIT n FOR UPDATE SKIP LOCKED) s;
	IF keys IS NULL THEN
		RETURN;
	END IF;
	EXECUTE 'SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod)
			   FROM pg_catalog.pg_dist_partition p
			   JOIN pg_catalog.pg_attribute a ON a.attrelid = p.logicalrelid
				AND a.attname = pg_catalog.column_to_column_name(p.logicalrelid, p.partkey)
			  WHERE p.logicalrelid = $1 AND p.partkey IS NOT NULL'
		INTO dist, dist_type USING d.source;
	EXECUTE format('SELECT array_agg(%1$s), array_agg(v.qc_inputs_hash), array_agg(v.qc_request)
					  FROM queryclaw.%2$I v
					 WHERE %3$s %1$s = ANY (%4$L::jsonb[])',
				   queryclaw.enrichment_key_expression(d.key_columns, 'v.'),
				   'enrichment_' || d.id || '_request',
				   -- (a reference or Citus local table has no distribution column)
				   CASE WHEN dist IS NOT NULL
						THEN format('v.%I = ANY (%L::%s[]) AND', dist,
									ARRAY(SELECT DISTINCT k ->> dist FROM unnest(keys) k), dist_type) END,
				   keys)
		INTO got_keys, got_hashes, got_requests;
	SELECT array_agg(k.key ORDER BY k.ord), array_agg(g.h ORDER BY k.ord),
		   array_agg(g.req ORDER BY k.ord), array_agg(md5(g.req::text) ORDER BY k.ord)
	  INTO keys, hashes, requests, rhashes
	  FROM unnest(keys) WITH ORDINALITY k(key, ord)
	  LEFT JOIN unnest(got_keys, got_hashes, got_requests) g(key, h, req) ON g.key = k.key;
END
$$;
COMMENT ON FUNCTION queryclaw.enrichment_citus_pick(queryclaw.enrichment_definitions, integer, jsonb) IS
'Internal to enrichments: the stale rows of this node''s shards to ask, with their requests.';

-- A result written into the rows of a request one by one, through the
-- enrichment's write-back (enrichment_<id>_apply_request of a distributed
-- table's enrichment); returns how many rows waited for it.
CREATE FUNCTION queryclaw.enrichment_citus_apply_request(enrichment bigint, results jsonb[],
														 request_ids bigint[])
RETURNS bigint
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	d queryclaw.enrichment_definitions;
	keys jsonb[];
	hashes text[];
	n bigint := 0;
BEGIN
	SELECT * INTO d FROM queryclaw.enrichment_definitions e
	 WHERE e.id = enrichment_citus_apply_request.enrichment;
	FOR i IN 1 .. coalesce(array_length(request_ids, 1), 0) LOOP
		SELECT array_agg(r.key), array_agg(r.inputs_hash) INTO keys, hashes
		  FROM queryclaw.enrichment_rows r
		 WHERE r.request_id = request_ids[i] AND r.state = 'running';
		PERFORM queryclaw.enrichment_apply_rows(d, results[i], keys, hashes);
		n := n + coalesce(array_length(keys, 1), 0);
	END LOOP;
	RETURN n;
END
$$;
COMMENT ON FUNCTION queryclaw.enrichment_citus_apply_request(bigint, jsonb[], bigint[]) IS
'Internal to enrichments: write results into their rows of a distributed table, one by one.';

-- On the coordinator: each worker's counts of d's rows (as the caller
-- reads them there) and counters, one jsonb per worker.
CREATE FUNCTION queryclaw.enrichment_citus_node_counts(d queryclaw.enrichment_definitions)
RETURNS SETOF jsonb
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	RETURN QUERY
	SELECT w.result::jsonb
	  FROM run_command_on_workers(format($q$
		SELECT pg_catalog.jsonb_build_object(
				'done', count(*) FILTER (WHERE r.state = 'done'),
				'stale', count(*) FILTER (WHERE r.state = 'stale'),
				'running', count(*) FILTER (WHERE r.state = 'running'),
				'failed', count(*) FILTER (WHERE r.state = 'failed'),
				'skipped', count(*) FILTER (WHERE r.state = 'skipped'), 'seen', count(*),
				'per_second', count(*) FILTER (WHERE r.enriched_at > pg_catalog.now() - interval '1 minute')
					/ greatest(extract(epoch FROM pg_catalog.now() - min(r.enriched_at)
						FILTER (WHERE r.enriched_at > pg_catalog.now() - interval '1 minute')), 1),
				'calls', e.calls, 'calls_saved', e.calls_saved, 'tokens', e.tokens,
				'last_error', e.last_error, 'walked', e.backfill_done)
		  FROM queryclaw.enrichment_definitions e
		  LEFT JOIN queryclaw.enrichment_rows r ON r.enrichment = e.id
		 WHERE e.id = %s
		 GROUP BY e.id$q$, d.id)) w
	 WHERE w.success AND w.result <> '';
END
$$;
COMMENT ON FUNCTION queryclaw.enrichment_citus_node_counts(queryclaw.enrichment_definitions) IS
'Internal to enrichments: each Citus worker''s counts of an enrichment''s rows, for queryclaw.enrichments on the coordinator.';

-- MCP servers' tools (docs/mcp.md): a queryclaw server with protocol 'mcp'
-- is an MCP server over Streamable HTTP; its tools are listed and called
-- under the server's policy, keys and limits, with USAGE on it.
--
CREATE FUNCTION queryclaw.mcp_tools(server name)
RETURNS TABLE (name text, title text, description text, input_schema jsonb,
               output_schema jsonb)
AS 'MODULE_PATHNAME', 'mcp_tools'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.mcp_tools(name) IS
'The tools an MCP server (a queryclaw server with protocol ''mcp'') offers: its tools/list, less what its tools option leaves out; needs USAGE on the server.';
REVOKE ALL ON FUNCTION queryclaw.mcp_tools(name) FROM PUBLIC;

CREATE FUNCTION queryclaw.mcp_call(server name, tool text, arguments jsonb DEFAULT '{}')
RETURNS jsonb
AS 'MODULE_PATHNAME', 'mcp_call'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION queryclaw.mcp_call(name, text, jsonb) IS
'Call a tool of an MCP server: {content, structured, is_error, text}, text the text parts joined; needs USAGE on the server.';
REVOKE ALL ON FUNCTION queryclaw.mcp_call(name, text, jsonb) FROM PUBLIC;

-- ---- A newcomer's first hour: queryclaw_user, and queue_status's eta ----
--
-- queryclaw_user: the one role to grant (GRANT queryclaw_user TO etl) for
-- every function a caller needs, synchronous, asynchronous and
-- enrichments, but sql_query (which offers the database to a model, which
-- could then send table data out with the web tools).  Like
-- queryclaw_admin and queryclaw_writer it belongs to the cluster: created
-- here if missing, left by DROP EXTENSION, and its members are the DBA's
-- (pg_dumpall keeps them; pg_dump keeps its privileges, which this script
-- gives at CREATE EXTENSION).
--
-- A role of that name made before, by someone else, is refused at CREATE
-- EXTENSION and at the update, as queryclaw_writer is: one that can log in
-- or has an attribute, is a member of other roles, owns objects, or holds
-- privileges on anything of this database or of the cluster.  Members are
-- its purpose, so only those a superuser granted without ADMIN OPTION are
-- taken: a role that queryclaw_ext made in another database of the
-- cluster, and a superuser granted, is taken as it is (a second database,
-- a dump restored beside the original); one a non-superuser made (who then
-- holds ADMIN OPTION on it, or granted it) is refused.
--
-- queryclaw.claim_role is the one place that says whether a role of a
-- given name can be taken; a later script may claim another role with it.
CREATE FUNCTION queryclaw.claim_role(role_name name, purpose text, members_allowed boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r oid := (SELECT oid FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) role_name);
	why text;
BEGIN
	IF r IS NULL THEN
		EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', role_name);
		RETURN;
	END IF;
	SELECT CASE
		WHEN a.rolcanlogin THEN 'it can log in'
		WHEN a.rolsuper OR a.rolcreaterole OR a.rolcreatedb OR a.rolreplication OR a.rolbypassrls
			THEN 'it has SUPERUSER, CREATEROLE, CREATEDB, REPLICATION or BYPASSRLS'
		WHEN NOT members_allowed AND EXISTS (SELECT FROM pg_catalog.pg_auth_members m
											  WHERE m.roleid OPERATOR(pg_catalog.=) r)
			THEN 'it has members'
		WHEN EXISTS (SELECT FROM pg_catalog.pg_auth_members m
					   JOIN pg_catalog.pg_roles member ON member.oid OPERATOR(pg_catalog.=) m.member
					   LEFT JOIN pg_catalog.pg_roles grantor ON grantor.oid OPERATOR(pg_catalog.=) m.grantor
					  WHERE m.roleid OPERATOR(pg_catalog.=) r
						AND (grantor.rolsuper IS NOT TRUE
							 OR (m.admin_option AND NOT member.rolsuper)))
			THEN 'it has members that a superuser did not grant, or that may grant it to others'
		WHEN EXISTS (SELECT FROM pg_catalog.pg_auth_members m
					  WHERE m.member OPERATOR(pg_catalog.=) r)
			THEN 'it is a member of other roles'
		WHEN EXISTS (SELECT FROM pg_catalog.pg_shdepend d
					  WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_authid'::pg_catalog.regclass
						AND d.refobjid OPERATOR(pg_catalog.=) r
						AND (d.deptype OPERATOR(pg_catalog.=) 'o'
							 OR d.dbid OPERATOR(pg_catalog.=) 0
							 OR d.dbid OPERATOR(pg_catalog.=)
								(SELECT oid FROM pg_catalog.pg_database
								  WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database())))
			THEN 'it owns objects or holds privileges'
		END INTO why
	  FROM pg_catalog.pg_roles a WHERE a.oid OPERATOR(pg_catalog.=) r;
	IF why IS NOT NULL THEN
		RAISE EXCEPTION 'role "%" exists and was not made for queryclaw_ext', role_name
			USING ERRCODE = 'insufficient_privilege',
				  DETAIL = pg_catalog.format('%s, but %s.', purpose, why),
				  HINT = 'Drop the role (or take from it what the detail names), and run the command again.';
	END IF;
END
$$;
REVOKE ALL ON FUNCTION queryclaw.claim_role(name, text, boolean) FROM PUBLIC;
COMMENT ON FUNCTION queryclaw.claim_role(name, text, boolean) IS
'For the extension''s scripts: create a NOLOGIN role of that name, or take one that exists when nothing but what the extension gives it (and, if allowed, members a superuser granted) comes with it; otherwise refuse it (42501).';

SELECT queryclaw.claim_role('queryclaw_user',
	'Every member of this role may call the functions of queryclaw_ext that reach the network', true);
COMMENT ON ROLE queryclaw_user IS
'queryclaw_ext: EXECUTE on every function a caller needs but sql_query; GRANT queryclaw_user TO a role to let it use the extension.';

-- EXECUTE on the caller's functions, by name (every form of each): those
-- of this version, including the enrichments' and MCP's (their sections
-- come before this one in this script; a name not created yet grants
-- nothing).
-- Not sql_query; not the functions PUBLIC has already (budget_status,
-- host_limits), nor the DBA's (audit_status), nor the internal ones.
DO $$
DECLARE
	f regprocedure;
BEGIN
	FOR f IN
		SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
		 WHERE p.pronamespace OPERATOR(pg_catalog.=) 'queryclaw'::regnamespace
		   AND p.proname OPERATOR(pg_catalog.=) ANY (ARRAY[
				-- synchronous
				'web_fetch', 'api_call', 'check_url', 'html_to_text',
				'web_fetch_many', 'api_call_many', 'web_search',
				'llm_chat_tools', 'llm_embed',
				-- asynchronous
				'web_fetch_async', 'api_call_async', 'llm_chat_tools_async',
				'wait', 'cancel_requests', 'retry_requests',
				-- enrichments, and the requests they are declared with
				'create_enrichment', 'alter_enrichment', 'pause_enrichment',
				'resume_enrichment', 'retry_enrichment', 'refresh_enrichment',
				'drop_enrichment', 'estimate_enrichment',
				'web_fetch_request', 'api_call_request', 'llm_request',
				'llm_embed_request',
				-- MCP servers' tools (USAGE on each server is its own GRANT)
				'mcp_tools', 'mcp_call']::name[])
		 ORDER BY 1::text
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO queryclaw_user', f);
	END LOOP;
END
$$;

-- queue_status's eta counts the wait of requests due later (a retry after
-- a 503, a Retry-After): the pace of the last minute alone made a request
-- due in 30 s look a fraction of a second away.  Still NULL when the pace
-- says nothing.
CREATE OR REPLACE VIEW queryclaw.queue_status WITH (security_invoker = true) AS
	WITH per_state AS (
		SELECT r.role, r.state, count(*) AS requests,
			   pg_catalog.now() - min(r.created_at)
				   FILTER (WHERE r.state IN ('queued', 'retrying')) AS oldest_waiting,
			   CASE WHEN r.state = 'queued'
					THEN count(*) FILTER (WHERE r.created_at > pg_catalog.now() - interval '1 minute')
					WHEN r.state IN ('done', 'failed', 'cancelled')
					THEN count(*) FILTER (WHERE r.finished_at > pg_catalog.now() - interval '1 minute')
			   END AS last_minute,
			   max(r.next_attempt_at) FILTER (WHERE r.state IN ('queued', 'retrying')) AS last_due
		  FROM queryclaw.requests r
		 GROUP BY r.role, r.state),
	pace AS (
		SELECT r.role, count(*) AS ended,
			   pg_catalog.now() - min(r.finished_at) AS span,
			   pg_catalog.now() - max(r.finished_at) AS since_last
		  FROM queryclaw.requests r
		 WHERE r.finished_at > pg_catalog.now() - interval '1 minute'
		 GROUP BY r.role)
	SELECT s.role, s.state, s.requests, s.oldest_waiting, s.last_minute,
		   CASE WHEN s.state IN ('queued', 'running', 'retrying') AND p.ended >= 2
				 AND p.since_last <= greatest(3 * p.span / p.ended, interval '1 second')
				THEN greatest(sum(s.requests) FILTER (WHERE s.state IN ('queued', 'running', 'retrying'))
								  OVER (PARTITION BY s.role) * p.span / p.ended,
							  max(s.last_due) OVER (PARTITION BY s.role) - pg_catalog.now())
		   END AS eta
	  FROM per_state s LEFT JOIN pace p ON p.role = s.role;
COMMENT ON VIEW queryclaw.queue_status IS
'Asynchronous requests per role and state: how many, the oldest waiting one''s age, how many reached the state in the last minute, and for unfinished ones the time left: at the pace requests ended in the last minute, and no sooner than the last one waiting is due (NULL when that pace says nothing).';

-- ---- Callbacks run apart from the requests (the callback workers) ----
--
-- An async worker no longer calls a request's callback in its own run: it
-- records the outcome and, when a callback is due, says so in waiting
-- ('callback queued'; the request stays 'running' until the callback has
-- run, a cancelled one 'cancelled' with finished_at unset), and a callback
-- worker calls the callback and makes the request final in one
-- transaction.  The callback workers find those requests role by role,
-- round-robin between roles, through requests_running_idx below.
-- cancelled requests whose callback 0.2's workers had still to call: the
-- callback workers find them by the same mark
UPDATE queryclaw.requests SET waiting = 'callback queued'
 WHERE state = 'cancelled' AND finished_at IS NULL AND callback IS NOT NULL;
DROP INDEX queryclaw.requests_cancelled_idx;

-- ---- A request's outcome recorded in place (a HOT update) ----
--
-- An async worker writes each request twice: its claim (queued to
-- running) and its outcome.  When a callback is due, the outcome changes
-- only result, error, sqlstate and waiting; with no index on those, nor
-- on a predicate reading them, PostgreSQL can write the new row version
-- beside the old one on its page without an entry in any index (a HOT
-- update), where before each outcome added one to three indexes (and
-- their clean-up of the versions it left).  So the requests on the wire
-- or waiting for their callback have one index, which the claim fills,
-- and which serves what requests_role_open_idx and the callback workers'
-- index served: a role's running requests (max_queued_per_role counts
-- them beside its waiting ones, in requests_role_due_idx), and the
-- callbacks due (those of them that say so in waiting).  Half of each
-- page is left free for those versions.
DROP INDEX queryclaw.requests_role_open_idx;
CREATE INDEX requests_running_idx ON queryclaw.requests (role, id)
	WHERE state IN ('running', 'cancelled') AND finished_at IS NULL;
ALTER TABLE queryclaw.requests SET (fillfactor = 50);

COMMENT ON COLUMN queryclaw.requests.state IS
'queued, running (on the wire; or answered, its callback due: waiting says callback queued), retrying, done, failed or cancelled.';
COMMENT ON COLUMN queryclaw.requests.waiting IS
'Why a request waits, in words a DBA acts on: for a queued or retrying one, a pause, a host rate limit, a spent budget, a retry after a status; callback queued for one whose outcome is recorded and whose callback has not run yet.  NULL when it does not wait.';

-- in_flight counts what is on the wire, not the requests answered whose
-- callback is due
CREATE OR REPLACE VIEW queryclaw.queue_hosts WITH (security_invoker = true) AS
	SELECT h.host, h.in_flight, h.queued, h.done_last_minute, h.failed_last_minute,
		   h.median_ms, l.rate_limit, l.max_concurrency
	  FROM (SELECT pg_catalog.lower(pg_catalog.substring(r.request ->> 'url', '^[^:/?#]+://([^/?#]*)'))
				   AS host,
				   count(*) FILTER (WHERE r.state = 'running' AND r.waiting IS NULL) AS in_flight,
				   count(*) FILTER (WHERE r.state IN ('queued', 'retrying')) AS queued,
				   count(*) FILTER (WHERE r.state = 'done') AS done_last_minute,
				   count(*) FILTER (WHERE r.state = 'failed') AS failed_last_minute,
				   percentile_cont(0.5) WITHIN GROUP (ORDER BY (r.result ->> 'elapsed_ms')::float8)
					   FILTER (WHERE r.state = 'done') AS median_ms
			  FROM queryclaw.requests r
			 WHERE r.request ? 'url'
			   AND (r.state IN ('queued', 'running', 'retrying')
					OR (r.state IN ('done', 'failed')
						AND r.finished_at > pg_catalog.now() - interval '1 minute'))
			 GROUP BY 1) h
	 CROSS JOIN LATERAL queryclaw.host_limits(h.host) l;
