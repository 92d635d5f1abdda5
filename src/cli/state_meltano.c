/*
 * state_meltano.c - Meltano's state documents: `faucet state export
 * --format meltano` and `faucet state import --format meltano`.
 *
 * What Meltano reads and writes (meltano/meltano, src/meltano/core:
 * state_service.py, job_state.py, state_store/base.py, utils merge()):
 *
 *   - `meltano state get ID` prints MeltanoState.json_merged(), the partial
 *     state merged over the completed one: {"singer_state": {...}}; and
 *     `meltano state set ID JSON` stores JSON as completed state after
 *     StateService.validate_state() checked that "singer_state" is in its
 *     top level.  export prints exactly that document.
 *   - Its state backends (state_store/filesystem.py and friends) keep
 *     MeltanoState.json(): {"completed": {"singer_state": ...},
 *     "partial": {...}}, partial being {} unless a run stopped midway.
 *     json_merged() is merge(partial, completed) with utils.merge(source,
 *     destination): every member of the source overwrites the
 *     destination's, objects merged member by member, recursively.
 *
 * import takes either form.  A non-empty "partial" is refused unless
 * --merge-partial, which merges it over "completed" as json_merged() does;
 * the merge works on the JSON text (values are copied byte for byte,
 * never re-encoded, so a bookmark's digits stay as written).  The bookmark
 * is the invocation key [T::]PIPELINE::ROW that `faucet run --singer`
 * hands to the command (doc/design.md §8).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "jsonw.h"

/* ---- JSON text, read without re-encoding ------------------------------- */

static size_t skip_ws(const char *s, size_t len, size_t i)
{
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	return i;
}

/* The end of the value starting at s[i] (the text is valid JSON). */
static size_t value_end(const char *s, size_t len, size_t i)
{
	int depth = 0, in_str = 0;

	for (; i < len; i++) {
		char c = s[i];

		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"') {
				in_str = 0;
				if (depth == 0)
					return i + 1;
			}
		} else if (c == '"') {
			in_str = 1;
		} else if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			if (--depth == 0)
				return i + 1;
			if (depth < 0)
				return i;
		} else if (depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' ||
					  c == '\r')) {
			return i;
		}
	}
	return i;
}

typedef struct {
	const char *key;  /* the key's text, quotes included */
	size_t key_len;
	const char *val;
	size_t val_len;
} member;

/* The members of the object text s (an object: checked by the caller). */
static int members(const char *s, size_t len, member **out, size_t *n)
{
	size_t i = skip_ws(s, len, 0) + 1, cap = 0;
	member *m = NULL;

	*out = NULL;
	*n = 0;
	for (;;) {
		member *grown;
		size_t ks;

		i = skip_ws(s, len, i);
		if (i >= len || s[i] == '}')
			break;
		if (s[i] == ',')
			i = skip_ws(s, len, i + 1);
		ks = i;
		i = value_end(s, len, i);
		if ((grown = faucet__reserve(m, &cap, *n + 1, sizeof(*m), 8)) == NULL) {
			free(m);
			return -1;
		}
		m = grown;
		m[*n].key = s + ks;
		m[*n].key_len = i - ks;
		i = skip_ws(s, len, i) + 1; /* the ':' */
		i = skip_ws(s, len, i);
		m[*n].val = s + i;
		i = value_end(s, len, i);
		m[*n].val_len = (size_t)(s + i - m[*n].val);
		(*n)++;
	}
	*out = m;
	return 0;
}

static int is_object(const char *s, size_t len)
{
	size_t i = skip_ws(s, len, 0);
	return i < len && s[i] == '{';
}

static const member *find_member(const member *m, size_t n, const member *like)
{
	for (size_t i = 0; i < n; i++) {
		if (m[i].key_len == like->key_len && memcmp(m[i].key, like->key, like->key_len) == 0)
			return &m[i];
	}
	return NULL;
}

/* Meltano's merge(source, destination) of two objects' texts into `out`:
 * destination's members in their order, each overwritten by source's of
 * the same key (two objects merged recursively), then source's members
 * destination lacks. */
static int merge_objects(const char *src, size_t slen, const char *dst, size_t dlen, faucet_buf *out)
{
	member *sm = NULL, *dm = NULL;
	size_t sn = 0, dn = 0;
	int rc = -1, first = 1;

	if (members(src, slen, &sm, &sn) != 0 || members(dst, dlen, &dm, &dn) != 0)
		goto done;
	if (faucet__buf_putc(out, '{') != 0)
		goto done;
	for (size_t i = 0; i < dn; i++) {
		const member *s = find_member(sm, sn, &dm[i]);

		if ((!first && faucet__buf_putc(out, ',') != 0) ||
		    faucet__buf_put(out, dm[i].key, dm[i].key_len) != 0 || faucet__buf_putc(out, ':') != 0)
			goto done;
		first = 0;
		if (s == NULL) {
			if (faucet__buf_put(out, dm[i].val, dm[i].val_len) != 0)
				goto done;
		} else if (is_object(s->val, s->val_len) && is_object(dm[i].val, dm[i].val_len)) {
			if (merge_objects(s->val, s->val_len, dm[i].val, dm[i].val_len, out) != 0)
				goto done;
		} else if (faucet__buf_put(out, s->val, s->val_len) != 0) {
			goto done;
		}
	}
	for (size_t i = 0; i < sn; i++) {
		if (find_member(dm, dn, &sm[i]) != NULL)
			continue;
		if ((!first && faucet__buf_putc(out, ',') != 0) ||
		    faucet__buf_put(out, sm[i].key, sm[i].key_len) != 0 || faucet__buf_putc(out, ':') != 0 ||
		    faucet__buf_put(out, sm[i].val, sm[i].val_len) != 0)
			goto done;
		first = 0;
	}
	rc = faucet__buf_putc(out, '}');
done:
	free(sm);
	free(dm);
	return rc;
}

/* ---- the bookmark key -------------------------------------------------- */

static int bookmark_key(const char *command, const char *tenant, const char *pipeline,
			const char *row, char **out)
{
	faucet_key *k = NULL;
	int rc;

	*out = NULL;
	if (*pipeline == '\0' || faucet_validate_key(pipeline) != 0 || strstr(pipeline, "::"))
		return cli_usage_error(command, "'%s' is not a pipeline name (one key segment, "
				       "no '::')", pipeline);
	if (*row == '\0' || faucet_validate_key(row) != 0 || strstr(row, "::"))
		return cli_usage_error(command, "--row '%s' is not a row name (one key segment, "
				       "no '::')", row);
	rc = faucet_key_new_invocation(&k, pipeline, row);
	if (rc == 0 && tenant != NULL)
		rc = faucet_key_set_tenant(k, tenant);
	if (rc == 0 && (*out = faucet_key_render(k)) == NULL)
		rc = FAUCET_ENOMEM;
	faucet_key_free(k);
	if (rc != 0)
		return cli_fail(CLI_EXIT_USAGE, "%s: the bookmark key of %s::%s", command, pipeline,
				row);
	if (faucet_validate_key(*out) != 0 || faucet_run_is_bookkeeping_key(*out)) {
		free(*out);
		*out = NULL;
		return cli_usage_error(command, "'%s::%s' is not an invocation's key", pipeline, row);
	}
	return 0;
}

/* ---- export ------------------------------------------------------------ */

enum { OPT_FORMAT = 1, OPT_ROW, OPT_TENANT, OPT_OUTPUT, OPT_PIPELINE, OPT_MERGE_PARTIAL,
       OPT_DRY_RUN };

static int check_format(const char *command, const char *format)
{
	if (strcmp(format, "meltano") != 0)
		return cli_usage_error(command, "--format '%s': expected meltano here", format);
	return 0;
}

int cli_state_export_meltano(cli_context *ctx, int argc, char **argv)
{
	static const cli_option opts[] = {
		{"format", 0, 1, OPT_FORMAT}, {"row", 0, 1, OPT_ROW}, CLI_TENANT_OPTION(OPT_TENANT),
		{"output", 'o', 1, OPT_OUTPUT}, {NULL, 0, 0, 0},
	};
	const char *pipeline = NULL, *row = FAUCET_RUN_DEFAULT_ROW, *tenant = NULL;
	const char *output = NULL, *arg;
	faucet_value *v = NULL;
	faucet_buf b = FAUCET_BUF_INIT;
	faucet_store *s;
	char *key = NULL;
	cli_args it;
	int id, rc = 0;

	cli_args_init(&it, ctx, "state export", argc, argv);
	while (rc == 0 && (id = cli_args_next(&it, opts, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help("state export --format meltano");
		if (id == OPT_FORMAT)
			rc = check_format("state export", arg);
		else if (id == OPT_ROW)
			row = arg;
		else if (id == OPT_TENANT)
			rc = cli_tenant_check("state export", arg, &tenant);
		else if (id == OPT_OUTPUT)
			output = arg;
		else if (pipeline == NULL)
			pipeline = arg;
		else
			rc = cli_usage_error("state export", "unexpected argument '%s'", arg);
	}
	if (rc != 0)
		return rc;
	if (pipeline == NULL && (rc = cli_default_pipeline(ctx, "state export", &pipeline)) != 0)
		return rc;
	if ((rc = bookmark_key("state export", tenant, pipeline, row, &key)) != 0)
		return rc;
	rc = cli_open_store_existing(ctx, &s);
	if (rc == 0) {
		if (faucet_store_get(s, key, &v) != 0)
			rc = cli_fail(CLI_EXIT_FAILED, "cannot read '%s' from %s", key,
				      ctx->store_label);
		faucet_store_free(s);
	}
	if (rc == 0 && v == NULL)
		rc = cli_error(CLI_EXIT_FAILED, "state export: the invocation %s has no bookmark in %s",
			       key, ctx->store_label);
	if (rc == 0 && !is_object(faucet_value_json(v), faucet_value_len(v)))
		rc = cli_error(CLI_EXIT_FAILED, "state export: the bookmark at %s is not a JSON "
			       "object, so it is not Singer state", key);
	if (rc == 0 && (faucet__buf_puts(&b, "{\"singer_state\":") != 0 ||
			faucet__buf_put(&b, faucet_value_json(v), faucet_value_len(v)) != 0 ||
			faucet__buf_puts(&b, "}\n") != 0))
		rc = cli_error(CLI_EXIT_FAILED, "out of memory");
	if (rc == 0 && (output == NULL || strcmp(output, "-") == 0)) {
		if (fwrite(b.ptr, 1, b.len, stdout) != b.len)
			rc = cli_error(CLI_EXIT_FAILED, "state export: cannot write it out");
	} else if (rc == 0) {
		if (faucet_write_file(output, "export file", b.ptr, b.len) != 0)
			rc = cli_fail(CLI_EXIT_FAILED, "state export");
		else if (ctx->json) {
			faucet_buf j = FAUCET_BUF_INIT;

			(void)faucet__buf_putc(&j, '{');
			cli_jw_member(&j, "key", 1);
			faucet__json_string(&j, key);
			cli_jw_member(&j, "format", 0);
			faucet__json_string(&j, "meltano");
			cli_jw_member(&j, "output", 0);
			faucet__json_string(&j, output);
			(void)faucet__buf_putc(&j, '}');
			rc = cli_jw_print(&j) != 0 ? CLI_EXIT_FAILED : 0;
		} else if (!ctx->quiet) {
			printf("exported the bookmark %s as Meltano state to %s\n", key, output);
		}
	}
	faucet__buf_dispose(&b);
	faucet_value_free(v);
	free(key);
	return rc;
}

/* ---- import ------------------------------------------------------------ */

/* A member of `doc` that must be an object when present: *out NULL when
 * absent.  Exit code (printed) when it is there but not an object. */
static int object_member(const char *where, const faucet_value *doc, const char *name,
			 const char *path, faucet_value **out)
{
	if (faucet_value_member(doc, name, out) != 0)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	if (*out != NULL && !is_object(faucet_value_json(*out), faucet_value_len(*out))) {
		faucet_value_free(*out);
		*out = NULL;
		return cli_error(CLI_EXIT_USAGE, "%s: \"%s\" is not a JSON object, so this is not "
				 "a Meltano state document", where, path);
	}
	return 0;
}

static int empty_object(const faucet_value *v)
{
	const char *s = faucet_value_json(v);
	size_t len = faucet_value_len(v), i = skip_ws(s, len, 0);

	return i < len && s[i] == '{' && skip_ws(s, len, i + 1) < len &&
	       s[skip_ws(s, len, i + 1)] == '}';
}

/* The Singer state a Meltano document holds, into *out.  Exit code
 * (printed, 2 for a bad document) on failure. */
static int singer_state_of(const char *where, const faucet_value *doc, int merge_partial,
			   faucet_value **out)
{
	faucet_value *completed = NULL, *partial = NULL, *merged = NULL, *state = NULL;
	const faucet_value *from = doc;
	int rc;

	*out = NULL;
	if (!is_object(faucet_value_json(doc), faucet_value_len(doc)))
		return cli_error(CLI_EXIT_USAGE, "%s: not a JSON object, so not a Meltano state "
				 "document ({\"singer_state\": {...}})", where);
	if ((rc = object_member(where, doc, "completed", "completed", &completed)) != 0 ||
	    (rc = object_member(where, doc, "partial", "partial", &partial)) != 0)
		goto done;
	if (partial != NULL && empty_object(partial)) {
		faucet_value_free(partial);
		partial = NULL;
	}
	if (partial != NULL && !merge_partial) {
		rc = cli_error(CLI_EXIT_USAGE, "%s: the document has a \"partial\" part (state of a "
			       "run that did not complete); give --merge-partial to merge it over "
			       "\"completed\" as Meltano does, or import the completed state alone",
			       where);
		goto done;
	}
	if (partial != NULL) {
		faucet_buf b = FAUCET_BUF_INIT;
		const char *dst = completed ? faucet_value_json(completed) : "{}";
		size_t dlen = completed ? faucet_value_len(completed) : 2;

		if (merge_objects(faucet_value_json(partial), faucet_value_len(partial), dst, dlen,
				  &b) != 0) {
			faucet__buf_dispose(&b);
			rc = cli_error(CLI_EXIT_FAILED, "out of memory");
			goto done;
		}
		rc = faucet_value_parse(&merged, b.ptr, b.len);
		faucet__buf_dispose(&b);
		if (rc != 0) {
			rc = cli_fail(CLI_EXIT_FAILED, "%s: merging \"partial\" over \"completed\"",
				      where);
			goto done;
		}
		from = merged;
	} else if (completed != NULL) {
		from = completed;
	}
	if ((rc = object_member(where, from, "singer_state",
				from == doc ? "singer_state" : from == completed
							       ? "completed.singer_state"
							       : "singer_state (merged)",
				&state)) != 0)
		goto done;
	if (state == NULL) {
		rc = cli_error(CLI_EXIT_USAGE, "%s: no \"singer_state\" %s, so this is not a Meltano "
			       "state document ({\"singer_state\": {...}})", where,
			       from == doc ? "member" : "in the completed/partial parts");
		goto done;
	}
	*out = state;
	state = NULL;
done:
	faucet_value_free(completed);
	faucet_value_free(partial);
	faucet_value_free(merged);
	faucet_value_free(state);
	return rc;
}

typedef struct {
	const char *pipeline, *row, *tenant;
	const char *input, *name; /* FILE or "-", and what messages call it */
	int merge_partial, dry_run;
} import_args;

/* import's arguments into *a: -1 to go on, else the exit code. */
static int parse_import_args(cli_context *ctx, int argc, char **argv, import_args *a)
{
	static const cli_option opts[] = {
		{"format", 0, 1, OPT_FORMAT},          {"pipeline", 0, 1, OPT_PIPELINE},
		{"row", 0, 1, OPT_ROW},                CLI_TENANT_OPTION(OPT_TENANT),
		{"merge-partial", 0, 0, OPT_MERGE_PARTIAL}, {"dry-run", 0, 0, OPT_DRY_RUN},
		{NULL, 0, 0, 0},
	};
	const char *arg;
	cli_args it;
	int id, rc = 0;

	memset(a, 0, sizeof(*a));
	a->row = FAUCET_RUN_DEFAULT_ROW;
	cli_args_init(&it, ctx, "state import", argc, argv);
	while (rc == 0 && (id = cli_args_next(&it, opts, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			return CLI_EXIT_USAGE;
		if (id == CLI_ARG_HELP)
			return cli_print_command_help("state import --format meltano");
		if (id == OPT_FORMAT)
			rc = check_format("state import", arg);
		else if (id == OPT_PIPELINE)
			a->pipeline = arg;
		else if (id == OPT_ROW)
			a->row = arg;
		else if (id == OPT_TENANT)
			rc = cli_tenant_check("state import", arg, &a->tenant);
		else if (id == OPT_MERGE_PARTIAL)
			a->merge_partial = 1;
		else if (id == OPT_DRY_RUN)
			a->dry_run = 1;
		else if (a->input == NULL)
			a->input = arg;
		else
			rc = cli_usage_error("state import", "unexpected argument '%s'", arg);
	}
	if (rc != 0)
		return rc;
	if (a->input == NULL)
		return cli_usage_error("state import", "missing FILE (or - for standard input)");
	if (a->pipeline == NULL &&
	    (rc = cli_default_pipeline(ctx, "state import", &a->pipeline)) != 0)
		return rc;
	a->name = strcmp(a->input, "-") == 0 ? "standard input" : a->input;
	return -1;
}

/* What an import holds, every piece freed by import_dispose. */
typedef struct {
	char *key, *text;
	faucet_value *doc, *state, *current;
	faucet_store *s;
	cli_write_run w;
	int changed;
} import_job;

static void import_dispose(import_job *j)
{
	cli_write_run_dispose(&j->w);
	faucet_store_free(j->s);
	faucet_value_free(j->doc);
	faucet_value_free(j->state);
	faucet_value_free(j->current);
	free(j->text);
	free(j->key);
}

/* The whole document is checked before the store is opened: exit 2
 * means nothing was written. */
static int read_document(const import_args *a, import_job *j)
{
	size_t len = 0;

	if (cli_read_input(a->input, &j->text, &len) != 0 ||
	    faucet_value_parse_at(&j->doc, j->text, len, a->name) != 0)
		return cli_fail(CLI_EXIT_USAGE, "state import");
	return singer_state_of(a->name, j->doc, a->merge_partial, &j->state);
}

/* --dry-run: read the bookmark there is, to say whether the import would
 * change it; a store not created yet holds no bookmark. */
static int plan_dry_run(cli_context *ctx, import_job *j)
{
	int absent = 0, rc;

	if ((rc = cli_open_store_or_absent(ctx, &j->s, &absent)) != 0)
		return rc;
	if (faucet_store_get(j->s, j->key, &j->current) != 0)
		return cli_fail(CLI_EXIT_FAILED, "cannot read '%s' from %s", j->key,
				ctx->store_label);
	j->changed = j->current == NULL || !faucet_value_equal(j->current, j->state);
	return 0;
}

/* The bookmark written as a run of its own (or the one it joins). */
static int write_bookmark(cli_context *ctx, import_job *j)
{
	const char *keys[1] = {j->key};
	int rc;

	if ((rc = cli_open_store(ctx, &j->s)) != 0 ||
	    (rc = cli_write_run_begin(ctx, j->s, "faucet state import --format meltano", keys, 1,
				      CLI_RUN_MAY_JOIN | CLI_RUN_EXCLUSIVE, &j->w)) != 0)
		return rc;
	if (faucet_run_put(j->w.run, j->key, j->state) != 0) {
		char *msg = faucet__strdup(faucet_error_last()->message);

		rc = cli_fail(CLI_EXIT_FAILED, "cannot write '%s' to %s", j->key, ctx->store_label);
		(void)cli_write_run_end(&j->w, 0, msg);
		free(msg);
		return rc;
	}
	if (cli_write_run_end(&j->w, 1, NULL) != 0)
		return CLI_EXIT_FAILED;
	j->changed = j->w.undo != NULL;
	return 0;
}

static int print_import_json(const import_args *a, const import_job *j)
{
	faucet_buf b = FAUCET_BUF_INIT;

	(void)faucet__buf_putc(&b, '{');
	cli_jw_member(&b, "key", 1);
	faucet__json_string(&b, j->key);
	cli_jw_member(&b, "pipeline", 0);
	faucet__json_string(&b, a->pipeline);
	cli_jw_member(&b, "row", 0);
	faucet__json_string(&b, a->row);
	cli_jw_member(&b, "tenant", 0);
	faucet__json_string(&b, a->tenant);
	cli_jw_member(&b, "dry_run", 0);
	(void)faucet__buf_puts(&b, a->dry_run ? "true" : "false");
	cli_jw_member(&b, "changed", 0);
	(void)faucet__buf_puts(&b, j->changed ? "true" : "false");
	cli_jw_member(&b, "value", 0);
	(void)faucet__buf_put(&b, faucet_value_json(j->state), faucet_value_len(j->state));
	cli_write_run_json(a->dry_run ? NULL : &j->w, &b);
	(void)faucet__buf_putc(&b, '}');
	return cli_jw_print(&b) != 0 ? CLI_EXIT_FAILED : 0;
}

static int report_import(cli_context *ctx, const import_args *a, const import_job *j)
{
	if (ctx->json)
		return print_import_json(a, j);
	if (ctx->quiet && !a->dry_run) /* as `state import`: a dry run's plan is its output */
		return 0;
	printf("%s%s the bookmark %s in %s from Meltano state (%s)%s\n",
	       a->dry_run ? "dry run: " : "",
	       j->changed ? (a->dry_run ? "would write" : "wrote") : "unchanged:", j->key,
	       ctx->store_label, a->name, a->dry_run ? "; nothing was written" : "");
	return 0;
}

int cli_state_import_meltano(cli_context *ctx, int argc, char **argv)
{
	import_args a;
	import_job j;
	int rc;

	if ((rc = parse_import_args(ctx, argc, argv, &a)) >= 0)
		return rc;
	memset(&j, 0, sizeof(j));
	if ((rc = bookmark_key("state import", a.tenant, a.pipeline, a.row, &j.key)) != 0)
		return rc;
	rc = read_document(&a, &j);
	if (rc == 0)
		rc = a.dry_run ? plan_dry_run(ctx, &j) : write_bookmark(ctx, &j);
	if (rc == 0)
		rc = report_import(ctx, &a, &j);
	import_dispose(&j);
	return rc;
}
