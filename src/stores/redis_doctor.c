/*
 * redis_doctor.c - `faucet doctor` on a Redis store: the round trip, the
 * server's durability settings, the namespace index against a SCAN (and
 * `faucet state reindex`, which repairs it), and under Sentinel the
 * sentinels' view and the replication a failover depends on
 * (doc/design.md §3.9).
 */
#include <stdlib.h>
#include <string.h>

#include "stores/redis_internal.h"

/* ---- doctor ------------------------------------------------------------ */

static int sentinel_round_trip(redis_store *s, redisContext *c)
{
	char *key = faucet_doctor_sentinel_key();
	faucet_value *probe = NULL, *got = NULL;
	redis_args a = {0};
	int rc;

	if (key == NULL)
		return FAUCET_ENOMEM;
	a.key = key;
	a.rkey = faucet_redis__full_key(s, key);
	rc = a.rkey ? faucet_value_parse(&probe, SENTINEL_JSON, strlen(SENTINEL_JSON))
		    : FAUCET_ENOMEM;
	a.value = probe;
	a.out = &got;
	if (rc == 0)
		rc = faucet_redis__op_put(s, c, &a);
	if (rc == 0)
		rc = faucet_redis__op_get(s, c, &a);
	if (a.rkey != NULL && faucet_redis__op_del(s, c, &a) != 0 && rc == 0)
		rc = FAUCET_ERROR;
	if (rc == 0 && !faucet_value_equal(got, probe))
		rc = faucet_error_set(FAUCET_ERROR,
				      "sentinel readback did not match what was written");
	faucet_value_free(probe);
	faucet_value_free(got);
	free((char *)a.rkey);
	free(key);
	return rc;
}


/* One configuration parameter's value (CONFIG GET), or NULL with the last
 * error set: CONFIG may be renamed away or denied by an ACL, as managed
 * Redis services do. */
static char *config_get(redis_store *s, redisContext *c, const char *name)
{
	const char *argv[3] = {"CONFIG", "GET", name};
	redisReply *r = faucet_redis__command(c, 3, argv, NULL);
	char *value;

	if (r != NULL && r->type == REDIS_REPLY_ARRAY) {
		if (r->elements == 2 && r->element[1]->type == REDIS_REPLY_STRING) {
			value = faucet__strdup(r->element[1]->str);
		} else {
			(void)faucet_redis__fail(s, "cannot read the server's configuration", name);
			value = NULL;
		}
		freeReplyObject(r);
		return value;
	}
	(void)faucet_redis__reply_ok(s, c, r, REDIS_REPLY_ARRAY, "cannot read the server's configuration");
	return NULL;
}

/* The "durability" probe.  Redis answers a SET once the write is in memory;
 * only with the append-only file on and fsync'd on every write
 * (appendonly yes, appendfsync always) is an acknowledged bookmark still
 * there after a crash or power cut.  Anything else is a WARN naming each
 * setting at fault; a server that will not show its configuration is a
 * SKIP saying the settings could not be checked. */
static int durability_probe(redis_store *s, redisContext *c, faucet_check_report *r)
{
	uint64_t start = faucet__now_ms();
	char *aof = config_get(s, c, "appendonly");
	char *fsync_mode = aof ? config_get(s, c, "appendfsync") : NULL;
	faucet_buf bad = FAUCET_BUF_INIT;
	char *reason = NULL;
	int rc;

	if (fsync_mode == NULL) {
		free(aof);
		reason = faucet__sprintf("the durability settings could not be checked: %s",
					 faucet_error_last()->message);
		if (reason == NULL)
			return FAUCET_ENOMEM;
		rc = faucet_check_report_add(r, "durability", FAUCET_PROBE_SKIP, reason,
					     faucet__now_ms() - start,
					     "make sure the server runs with appendonly yes and "
					     "appendfsync always (CONFIG GET is not available to "
					     "this connection)");
		free(reason);
		return rc;
	}
	if (strcmp(aof, "yes") != 0)
		(void)faucet__buf_printf(&bad, "appendonly %s", aof);
	if (strcmp(fsync_mode, "always") != 0)
		(void)faucet__buf_printf(&bad, "%sappendfsync %s", bad.len ? ", " : "", fsync_mode);
	free(aof);
	free(fsync_mode);
	return faucet__check_durability_verdict(
		r, &bad, start,
		"it acknowledges writes before they are on disk, so a bookmark written just "
		"before a crash or power cut may be lost",
		"set appendonly yes and appendfsync always in redis.conf (or CONFIG SET "
		"appendonly yes, CONFIG SET appendfsync always, CONFIG REWRITE)");
}


/* ---- the index against the namespace ----------------------------------- */

/* What SCAN finds and what the index lists, both sorted: *missing = keys
 * not in the index, *stale = members with no key.  The two lists are taken
 * one after the other, so a writer in between can show up as a difference;
 * reindex settles each one by looking again, atomically. */
static int index_diff(redis_store *s, redisContext *c, faucet_strarray *missing,
		      faucet_strarray *stale)
{
	faucet_strarray scanned = {NULL, 0}, indexed = {NULL, 0};
	size_t i = 0, j = 0;
	int rc = faucet_redis__scan_namespace(s, c, "", &scanned);

	if (rc == 0)
		rc = faucet_redis__index_range(s, c, "", &indexed);
	while (rc == 0 && (i < scanned.count || j < indexed.count)) {
		int cmp = i == scanned.count ? 1
			: j == indexed.count ? -1
					     : strcmp(scanned.strings[i], indexed.strings[j]);
		if (cmp < 0)
			rc = faucet__strarray_push(missing, scanned.strings[i++]);
		else if (cmp > 0)
			rc = faucet__strarray_push(stale, indexed.strings[j++]);
		else
			i++, j++;
	}
	faucet_strarray_dispose(&scanned);
	faucet_strarray_dispose(&indexed);
	return rc;
}

/* Make the index agree with one key, atomically: member when the key
 * exists, no member when it does not.  Answers 1 = added, -1 = removed,
 * 0 = already right.  A Lua script, so a write landing between our look
 * and our change cannot be undone by it. */
static const char settle_script[] =
	"if redis.call('EXISTS', KEYS[1]) == 1 then "
	"return redis.call('ZADD', KEYS[2], 0, ARGV[1]) "
	"else return -redis.call('ZREM', KEYS[2], ARGV[1]) end";

#define SETTLE_BATCH 1000

/* Settle a list of keys, SETTLE_BATCH scripts per round trip.  With
 * min_replicas the batch ends with a WAIT like every other write: a batch
 * that changed the index and was confirmed by fewer replicas is
 * FAUCET_EUNKNOWN. */
static int settle_keys(redis_store *s, redisContext *c, const faucet_strarray *keys,
		       size_t *added, size_t *removed)
{
	for (size_t from = 0; from < keys->count; from += SETTLE_BATCH) {
		size_t n = keys->count - from < SETTLE_BATCH ? keys->count - from : SETTLE_BATCH;
		size_t changed = *added + *removed;
		int rc = 0, waiting = 0;

		for (size_t i = 0; i < n; i++) {
			char *rkey = faucet_redis__full_key(s, keys->strings[from + i]);
			const char *argv[6] = {"EVAL", settle_script, "2", rkey, s->index,
					       keys->strings[from + i]};
			int ok = rkey != NULL &&
				 redisAppendCommandArgv(c, 6, argv, NULL) == REDIS_OK;

			free(rkey);
			if (!ok) {
				/* Nothing sent yet for this batch's tail: the
				 * replies of what was queued are read below. */
				n = i;
				rc = faucet_error_set(FAUCET_ENOMEM, "out of memory");
				break;
			}
		}
		if (rc == 0 && s->min_replicas > 0) {
			if ((rc = faucet_redis__append_wait(s, c)) != 0)
				return rc; /* the connection is marked broken */
			waiting = 1;
		}
		for (size_t i = 0; i < n; i++) {
			void *reply = NULL;
			redisReply *r;

			if (redisGetReply(c, &reply) != REDIS_OK)
				return faucet_redis__lost_write(s, c, "cannot rebuild the namespace index");
			r = reply;
			if (rc == 0 && r->type == REDIS_REPLY_INTEGER) {
				if (r->integer > 0)
					(*added)++;
				else if (r->integer < 0)
					(*removed)++;
			} else if (rc == 0) {
				rc = faucet_redis__fail(s, "cannot rebuild the namespace index",
						r->type == REDIS_REPLY_ERROR ? r->str
									     : "unexpected reply");
			}
			freeReplyObject(r);
		}
		if (waiting) {
			int wrc = faucet_redis__wait_verdict(s, c, "cannot rebuild the namespace index",
					       rc == 0 && *added + *removed > changed);

			if (rc == 0)
				rc = wrc;
		}
		if (rc != 0)
			return rc;
	}
	return 0;
}

typedef struct {
	size_t *added, *removed;
} reindex_args;

static int op_reindex(redis_store *s, redisContext *c, redis_args *a)
{
	reindex_args *out = (reindex_args *)a->written;
	faucet_strarray missing = {NULL, 0}, stale = {NULL, 0};
	int rc = index_diff(s, c, &missing, &stale);

	if (rc == 0)
		rc = settle_keys(s, c, &missing, out->added, out->removed);
	if (rc == 0)
		rc = settle_keys(s, c, &stale, out->added, out->removed);
	faucet_strarray_dispose(&missing);
	faucet_strarray_dispose(&stale);
	return rc;
}

/* The reindex slot: faucet_store_reindex. */
int faucet_redis__reindex(faucet_store_backend *b, size_t *added, size_t *removed)
{
	redis_store *s = (redis_store *)b;
	reindex_args out = {added, removed};
	redis_args a = {.written = (int *)(void *)&out};

	*added = *removed = 0;
	if (s->index == NULL)
		return faucet_error_set(FAUCET_EUNSUPPORTED,
					"redis state store namespace '%s' keeps no index: open it "
					"with ?index=true (config: index: true) to build one",
					s->ns);
	/* Every step only adds what exists and removes what does not, so a
	 * retry after a broken connection does no harm. */
	return faucet_redis__run(s, op_reindex, &a, 1);
}

/* The "index" probe.  With index=true: the index and a SCAN of the
 * namespace agree, else a WARN with the counts (someone wrote the
 * namespace without going through an index-keeping store: lists miss
 * keys or show deleted ones).  Without it: a WARN if an index is lying
 * around, since our writes no longer keep it and turning index on again
 * would trust a stale one. */
static int index_probe(redis_store *s, redisContext *c, faucet_check_report *r)
{
	uint64_t start = faucet__now_ms();
	faucet_strarray missing = {NULL, 0}, stale = {NULL, 0};
	char *reason = NULL;
	int rc;

	if (s->index == NULL) {
		char *name = faucet__sprintf("%s.index", s->ns);
		const char *argv[2] = {"EXISTS", name};
		redisReply *rep = name ? faucet_redis__command(c, 2, argv, NULL) : NULL;
		int exists;

		if (name == NULL)
			return FAUCET_ENOMEM;
		free(name);
		if (faucet_redis__reply_ok(s, c, rep, REDIS_REPLY_INTEGER, "cannot look for an index") != 0)
			return faucet__check_report_probe(r, "index", 1, start,
							  "check the connection to the server");
		exists = rep->integer != 0;
		freeReplyObject(rep);
		if (!exists)
			return faucet_check_report_add(r, "index", FAUCET_PROBE_PASS, NULL,
						       faucet__now_ms() - start, NULL);
		reason = faucet__sprintf("Redis key '%s.index' holds a namespace index, but this "
					 "store is opened without index=true, so its writes do "
					 "not keep it up to date",
					 s->ns);
		rc = reason ? faucet_check_report_add(r, "index", FAUCET_PROBE_WARN, reason,
						      faucet__now_ms() - start,
						      "open the store with index=true everywhere and run "
						      "`faucet state reindex`, or delete the index key")
			    : FAUCET_ENOMEM;
		free(reason);
		return rc;
	}
	rc = index_diff(s, c, &missing, &stale);
	if (rc != 0)
		return faucet__check_report_probe(r, "index", 1, start,
						  "check the connection to the server");
	if (missing.count == 0 && stale.count == 0) {
		rc = faucet_check_report_add(r, "index", FAUCET_PROBE_PASS, NULL,
					     faucet__now_ms() - start, NULL);
	} else {
		reason = faucet__sprintf(
			"the namespace index has drifted from the keys: %zu key(s) missing from "
			"it (first: '%s'), %zu member(s) whose key no longer exists (first: '%s'); "
			"list and export do not see the missing ones",
			missing.count, missing.count ? missing.strings[0] : "",
			stale.count, stale.count ? stale.strings[0] : "");
		rc = reason ? faucet_check_report_add(r, "index", FAUCET_PROBE_WARN, reason,
						      faucet__now_ms() - start,
						      "run `faucet state reindex`; make every writer of "
						      "the namespace use index=true")
			    : FAUCET_ENOMEM;
		free(reason);
	}
	faucet_strarray_dispose(&missing);
	faucet_strarray_dispose(&stale);
	return rc;
}

/* ---- doctor: Sentinel ---------------------------------------------------- */

/* The value of `name` in a flat [name, value, ...] reply, or NULL. */
static const char *flat_field(const redisReply *r, const char *name)
{
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
		if (r->element[i]->type == REDIS_REPLY_STRING &&
		    r->element[i + 1]->type == REDIS_REPLY_STRING &&
		    strcmp(r->element[i]->str, name) == 0)
			return r->element[i + 1]->str;
	}
	return NULL;
}

/* One sentinel's view: "master H:P (flags F); replicas: ...; quorum Q,
 * N other sentinels" appended to b; *master_at = "H:P" (caller frees). */
static int sentinel_view(redis_store *s, const redis_addr *at, faucet_buf *b, char **master_at)
{
	const char *master_argv[3] = {"SENTINEL", "master", s->master};
	const char *replicas_argv[3] = {"SENTINEL", "replicas", s->master};
	redisContext *c;
	redisReply *m, *rs;
	int rc = faucet_redis__connect_node(s, at->host, at->port, REDIS_SENTINEL_TIMEOUT_MS,
			      REDIS_SENTINEL_TIMEOUT_MS, 1, &c);

	*master_at = NULL;
	if (rc != 0)
		return rc;
	m = faucet_redis__command(c, 3, master_argv, NULL);
	rc = faucet_redis__reply_ok(s, c, m, REDIS_REPLY_ARRAY, "cannot ask a sentinel about the master");
	if (rc != 0) {
		redisFree(c);
		return rc;
	}
	*master_at = faucet__sprintf("%s:%s", flat_field(m, "ip") ? flat_field(m, "ip") : "?",
				     flat_field(m, "port") ? flat_field(m, "port") : "?");
	(void)faucet__buf_printf(b, "master '%s' at %s (flags %s) as sentinel %s:%d sees it; ",
				s->master, *master_at ? *master_at : "?",
				flat_field(m, "flags") ? flat_field(m, "flags") : "?", at->host,
				at->port);
	rs = faucet_redis__command(c, 3, replicas_argv, NULL);
	if (faucet_redis__reply_ok(s, c, rs, REDIS_REPLY_ARRAY,
				   "cannot ask a sentinel about the replicas") == 0) {
		(void)faucet__buf_puts(b, "replicas: ");
		for (size_t i = 0; i < rs->elements; i++) {
			const redisReply *one = rs->element[i];
			(void)faucet__buf_printf(b, "%s%s:%s (%s)", i ? ", " : "",
						flat_field(one, "ip") ? flat_field(one, "ip") : "?",
						flat_field(one, "port") ? flat_field(one, "port") : "?",
						flat_field(one, "flags") ? flat_field(one, "flags") : "?");
		}
		if (rs->elements == 0)
			(void)faucet__buf_puts(b, "none");
		freeReplyObject(rs);
	}
	(void)faucet__buf_printf(b, "; quorum %s, %s other sentinel(s)",
				flat_field(m, "quorum") ? flat_field(m, "quorum") : "?",
				flat_field(m, "num-other-sentinels") ? flat_field(m, "num-other-sentinels")
								     : "?");
	freeReplyObject(m);
	redisFree(c);
	return *master_at != NULL ? 0 : FAUCET_ENOMEM;
}

/* The "sentinels" probe: the master, its replicas and the quorum as the
 * first sentinel that answers sees them; a WARN when sentinels name
 * different masters or some do not answer (fewer left to reach a quorum). */
static int sentinels_probe(redis_store *s, faucet_check_report *r)
{
	uint64_t start = faucet__now_ms();
	faucet_buf view = FAUCET_BUF_INIT, odd = FAUCET_BUF_INIT;
	char *first = NULL;
	int rc = 0, status;

	for (size_t i = 0; i < s->nsentinels && rc != FAUCET_ENOMEM; i++) {
		faucet_buf mine = FAUCET_BUF_INIT;
		char *at = NULL;
		int one = sentinel_view(s, &s->sentinels[i], first == NULL ? &view : &mine, &at);

		if (one == FAUCET_ENOMEM)
			rc = FAUCET_ENOMEM;
		else if (one != 0)
			(void)faucet__buf_printf(&odd, "; sentinel %s:%d did not answer",
						s->sentinels[i].host, s->sentinels[i].port);
		else if (first == NULL)
			first = at, at = NULL;
		else if (strcmp(first, at) != 0)
			(void)faucet__buf_printf(&odd, "; sentinel %s:%d names %s as master",
						s->sentinels[i].host, s->sentinels[i].port, at);
		free(at);
		faucet__buf_dispose(&mine);
	}
	if (rc == 0) {
		status = first == NULL ? FAUCET_PROBE_FAIL
			 : odd.len ? FAUCET_PROBE_WARN
				   : FAUCET_PROBE_PASS;
		(void)faucet__buf_puts(&view, first == NULL ? "no sentinel answered" : "");
		(void)faucet__buf_puts(&view, odd.ptr ? odd.ptr : "");
		rc = view.failed ? FAUCET_ENOMEM
				 : faucet_check_report_add(
					   r, "sentinels", (faucet_probe_status)status, view.ptr,
					   faucet__now_ms() - start,
					   status == FAUCET_PROBE_PASS
						   ? NULL
						   : "check that every sentinel in the URL runs and "
						     "monitors the master under this name");
	}
	free(first);
	faucet__buf_dispose(&view);
	faucet__buf_dispose(&odd);
	return rc;
}

/* The "replication" probe of a Sentinel store: Redis replicates
 * asynchronously, so without min_replicas an acknowledged write may be on
 * the master alone when it fails (WARN); with it, a PASS when the master
 * has that many replicas connected, else a WARN that every write will
 * end FAUCET_EUNKNOWN. */
static int sentinel_replication_probe(redis_store *s, redisContext *c, faucet_check_report *r)
{
	const char *argv[2] = {"INFO", "replication"};
	uint64_t start = faucet__now_ms();
	redisReply *rep = faucet_redis__command(c, 2, argv, NULL);
	long connected = -1;
	char *reason;
	int rc, ok;

	if (faucet_redis__reply_ok(s, c, rep, REDIS_REPLY_STRING, "cannot read INFO replication") == 0) {
		const char *at = strstr(rep->str, "connected_slaves:");
		if (at != NULL)
			connected = strtol(at + strlen("connected_slaves:"), NULL, 10);
		freeReplyObject(rep);
	}
	if (s->min_replicas == 0) {
		reason = faucet__sprintf("Redis replication is asynchronous and min_replicas is not "
					 "set: a write is acknowledged once the master has it, so a "
					 "failover can lose it (%ld replica(s) connected)",
					 connected);
		ok = 0;
	} else {
		ok = connected >= s->min_replicas;
		reason = faucet__sprintf("min_replicas=%d, wait_timeout=%dms: a write is "
					 "acknowledged once %d replica(s) have it; %ld connected%s",
					 s->min_replicas, s->wait_timeout_ms, s->min_replicas,
					 connected,
					 ok ? "" : " - every write ends 'outcome unknown' until "
						   "enough replicas are back");
	}
	if (reason == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_check_report_add(r, "replication", ok ? FAUCET_PROBE_PASS : FAUCET_PROBE_WARN,
				     reason, faucet__now_ms() - start,
				     ok ? NULL
					: s->min_replicas == 0
					? "add ?min_replicas=1 (or more) to the URL so a write counts "
					  "only once a replica has it (README: When one server is not "
					  "enough)"
					: "start the replicas, or lower min_replicas");
	free(reason);
	return rc;
}

/* Four probes: "connect" (a connection, AUTH, SELECT and PING),
 * "sentinel" (SET, GET and DEL of a unique key), "durability" (the
 * server keeps acknowledged writes) and "index" (index_probe), with the
 * doctor's timeout on every command. */
int faucet_redis__check(faucet_store_backend *b, const faucet_check_context *ctx,
			faucet_check_report **out)
{
	redis_store *s = (redis_store *)b;
	uint64_t timeout = ctx->timeout_ms ? ctx->timeout_ms : 10000;
	uint64_t start = faucet__now_ms();
	char *hint = faucet__sprintf("check that the Redis server in %s is reachable and the "
				     "password and database are right",
				     s->redacted);
	redisContext *c = NULL;
	int rc, failed;

	if (hint == NULL)
		return FAUCET_ENOMEM;
	rc = faucet_check_report_new(out);
	if (rc != 0) {
		free(hint);
		return rc;
	}
	failed = faucet__pool_acquire(s->pool, (void **)&c, NULL) != 0;
	if (!failed) {
		const char *ping[1] = {"PING"};

		(void)redisSetTimeout(c, faucet_redis__ms_to_tv(timeout));
		failed = faucet_redis__command_ok(s, c, 1, ping, NULL, REDIS_REPLY_STATUS, "PING failed") != 0;
	}
	rc = faucet__check_report_probe(*out, "connect", failed, start, hint);
	if (rc == 0 && !failed) {
		start = faucet__now_ms();
		rc = faucet__check_report_probe(*out, "sentinel", sentinel_round_trip(s, c) != 0, start, hint);
		if (rc == 0 && c->err == 0)
			rc = durability_probe(s, c, *out);
		if (rc == 0 && c->err == 0)
			rc = index_probe(s, c, *out);
		if (rc == 0 && c->err == 0 && s->master != NULL)
			rc = sentinel_replication_probe(s, c, *out);
	}
	if (rc == 0 && s->master != NULL)
		rc = sentinels_probe(s, *out);
	if (c != NULL) {
		if (c->err == 0)
			(void)redisSetTimeout(c, faucet_redis__ms_to_tv(REDIS_COMMAND_TIMEOUT_MS));
		faucet__pool_release(s->pool, c, c->err != 0);
	}
	free(hint);
	if (rc != 0) {
		faucet_check_report_free(*out);
		*out = NULL;
	}
	return rc;
}
