/* queryclaw_ext 0.2 -> 0.3: every change to SQL objects since release 0.2 */

\echo Use "ALTER EXTENSION queryclaw_ext UPDATE TO '0.3'" to load this file. \quit

-- Release 0.2 (tag v0.2.0) is what users have installed; its scripts,
-- queryclaw_ext--0.1.sql and queryclaw_ext--0.1--0.2.sql, are never
-- changed again.  Every change to the extension's SQL objects from then on
-- goes here, and test/upgrade/ checks that a database updated from 0.1 and
-- one updated from 0.2 both end equal to a fresh install.  No object has
-- changed since 0.2 yet.

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
-- of this version, including the enrichments' (their section comes
-- before this one in this script; a name not created yet grants nothing).
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
				'llm_embed_request']::name[])
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
