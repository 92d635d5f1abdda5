/*
 * state_pipeline.c - `faucet state copy PIPELINE --to-pipeline NEW` and
 * `faucet state move PIPELINE NEW`: one pipeline's data keys re-keyed to
 * another pipeline of the same store (Terraform's `state mv`, Meltano's
 * `state copy/move`).
 *
 * Every data key of [T::]PIPELINE:: is decoded by the key parser and
 * rendered again by the key builder under NEW (the tenant kept, a row
 * renamed by --row-map), so the copy's keys are exactly the ones a pipeline
 * named NEW reads.  A key the builder would not render back as it is
 * stored (written by hand outside the key scheme) stops the command before
 * anything is written: re-keying it by text would guess.
 *
 * The whole operation is one run (doc/design.md §8.7): a pipeline-level run
 * of the destination's namespace, whose marker holds every key written
 * and - for a move - every source key deleted, so one `state undo` puts both
 * pipelines back.  Both pipelines' leases are held throughout (doc/design.md
 * §8), taken in byte order of their names so that two opposite moves
 * cannot each hold one and wait for the other; the source is read under
 * them.  Bookkeeping keys are never copied, moved or replaced.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "jsonw.h"

typedef struct {
	const char *from, *to; /* borrowed from argv: "OLD=NEW" split */
	char *owned;           /* the copy split in place */
} row_map;

typedef struct {
	cli_context *ctx;
	const char *command; /* "state copy" / "state move" */
	const char *src, *dst, *tenant;
	row_map *maps;
	size_t nmaps;
	int move, replace, dry_run;
	/* Filled while planning. */
	faucet_strarray src_keys;  /* data keys of the source, sorted */
	faucet_value **src_vals;   /* parallel to src_keys */
	faucet_strarray dst_keys;  /* the re-keyed keys, parallel to src_keys */
	faucet_strarray stale;     /* the destination's data keys the copy does not write */
} pcopy;

static void pcopy_dispose(pcopy *p)
{
	for (size_t i = 0; i < p->nmaps; i++)
		free(p->maps[i].owned);
	free(p->maps);
	for (size_t i = 0; p->src_vals != NULL && i < p->src_keys.count; i++)
		faucet_value_free(p->src_vals[i]);
	free(p->src_vals);
	faucet_strarray_dispose(&p->src_keys);
	faucet_strarray_dispose(&p->dst_keys);
	faucet_strarray_dispose(&p->stale);
}

/* A pipeline (or row) name as the command takes it: a valid key segment
 * without "::". */
static int check_name(const char *command, const char *what, const char *name)
{
	if (*name == '\0' || faucet_validate_key(name) != 0 || strstr(name, "::") != NULL)
		return cli_usage_error(command, "'%s' is not a valid %s name (one key segment: "
				       "[A-Za-z0-9_.:/-], no '::')", name, what);
	return 0;
}

static int add_row_map(pcopy *p, const char *text)
{
	const char *eq = strchr(text, '=');
	row_map *maps, *m;
	int rc;

	if (eq == NULL || eq == text || eq[1] == '\0')
		return cli_usage_error(p->command, "--row-map '%s': expected OLD=NEW", text);
	maps = realloc(p->maps, (p->nmaps + 1) * sizeof(*maps));
	if (maps == NULL)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	p->maps = maps;
	m = &maps[p->nmaps];
	if ((m->owned = faucet__strdup(text)) == NULL)
		return cli_error(CLI_EXIT_FAILED, "out of memory");
	p->nmaps++;
	m->owned[eq - text] = '\0';
	m->from = m->owned;
	m->to = m->owned + (eq - text) + 1;
	if ((rc = check_name(p->command, "row", m->from)) != 0 ||
	    (rc = check_name(p->command, "row", m->to)) != 0)
		return rc;
	for (size_t i = 0; i + 1 < p->nmaps; i++) {
		if (strcmp(p->maps[i].from, m->from) == 0)
			return cli_usage_error(p->command, "--row-map: row '%s' is mapped twice",
					       m->from);
	}
	return 0;
}

static const char *mapped_row(const pcopy *p, const char *row)
{
	for (size_t i = 0; row != NULL && i < p->nmaps; i++) {
		if (strcmp(p->maps[i].from, row) == 0)
			return p->maps[i].to;
	}
	return row;
}

/* `k`'s components rendered under `pipeline` with `row` by the key builder
 * (NULL when out of memory or the builder refuses them). */
static char *render_as(const faucet_key *k, const char *tenant, const char *pipeline,
		       const char *row)
{
	faucet_key *n = NULL;
	char *sub = NULL, *out = NULL;
	int rc;

	rc = row != NULL ? faucet_key_new_invocation(&n, pipeline, row)
			 : faucet_key_new_pipeline(&n, pipeline);
	if (rc == 0 && tenant != NULL)
		rc = faucet_key_set_tenant(n, tenant);
	if (rc == 0 && (sub = faucet_key_sub(k)) != NULL)
		rc = faucet_key_set_sub(n, sub);
	/* The parser reports a shard as the sub (doc/design.md §2): setting it
	 * back as the sub renders the same text.  (faucet_key_sub allocates.) */
	if (rc == 0 && sub == NULL && faucet_key_shard(k) != NULL)
		rc = faucet_key_set_shard(n, faucet_key_shard(k));
	if (rc == 0 && faucet_key_suffix(k) != FAUCET_SUFFIX_NONE)
		rc = faucet_key_set_suffix(n, faucet_key_suffix(k), faucet_key_suffix_arg(k));
	if (rc == 0)
		out = faucet_key_render(n);
	free(sub);
	faucet_key_free(n);
	return out;
}

/* The destination key of source key `key`, into *out.  Exit code on
 * failure (printed). */
static int rekey(const pcopy *p, const char *key, char **out)
{
	faucet_key *k = NULL;
	char *same = NULL;
	const char *row;
	int rc = 0;

	*out = NULL;
	if (faucet_key_parse(&k, p->tenant, p->src, key) != 0)
		return cli_fail(CLI_EXIT_FAILED, "%s: cannot decode '%s'", p->command, key);
	row = faucet_key_row(k);
	same = render_as(k, p->tenant, p->src, row);
	if (same == NULL || strcmp(same, key) != 0) {
		rc = cli_error(CLI_EXIT_FAILED,
			       "%s: key '%s' is not one the key builder renders (written outside "
			       "the key scheme?), so it cannot be re-keyed; nothing was written",
			       p->command, key);
	} else if ((*out = render_as(k, p->tenant, p->dst, mapped_row(p, row))) == NULL) {
		rc = cli_fail(CLI_EXIT_USAGE, "%s: cannot render '%s' under pipeline '%s'",
			      p->command, key, p->dst);
	}
	free(same);
	faucet_key_free(k);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The data keys under `prefix`, bookkeeping left out. */
static int data_keys(pcopy *p, faucet_store *s, const char *prefix, faucet_strarray *out)
{
	size_t n = 0;

	if (faucet_store_list(s, prefix, out) != 0)
		return cli_fail(CLI_EXIT_FAILED, "cannot list '%s' in %s", prefix,
				p->ctx->store_label);
	for (size_t i = 0; i < out->count; i++) {
		if (faucet_run_is_bookkeeping_key(out->strings[i]))
			free(out->strings[i]);
		else
			out->strings[n++] = out->strings[i];
	}
	out->count = n;
	return 0;
}

static int in_sorted(const faucet_strarray *sorted, const char *key)
{
	return sorted->count > 0 && bsearch(&key, sorted->strings, sorted->count,
					    sizeof(char *), cmp_str) != NULL;
}

/* Read the source, re-key it, look at the destination. */
static int plan(pcopy *p, faucet_store *s)
{
	char *sp = NULL, *dp = NULL;
	faucet_strarray sorted = {NULL, 0};
	int rc;

	sp = p->tenant ? faucet__sprintf("%s::%s::", p->tenant, p->src) : faucet__sprintf("%s::", p->src);
	dp = p->tenant ? faucet__sprintf("%s::%s::", p->tenant, p->dst) : faucet__sprintf("%s::", p->dst);
	if (sp == NULL || dp == NULL) {
		rc = cli_error(CLI_EXIT_FAILED, "out of memory");
		goto done;
	}
	if ((rc = data_keys(p, s, sp, &p->src_keys)) != 0)
		goto done;
	if (p->src_keys.count == 0) {
		rc = cli_error(CLI_EXIT_USAGE, "%s: pipeline '%s'%s%s has no keys in %s; nothing "
			       "was written", p->command, p->src, p->tenant ? " of tenant " : "",
			       p->tenant ? p->tenant : "", p->ctx->store_label);
		goto done;
	}
	p->src_vals = faucet__calloc(p->src_keys.count, sizeof(*p->src_vals));
	if (p->src_vals == NULL) {
		rc = cli_error(CLI_EXIT_FAILED, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < p->src_keys.count; i++) {
		char *nk = NULL;

		if (faucet_store_get(s, p->src_keys.strings[i], &p->src_vals[i]) != 0) {
			rc = cli_fail(CLI_EXIT_FAILED, "cannot read '%s' from %s",
				      p->src_keys.strings[i], p->ctx->store_label);
			goto done;
		}
		if ((rc = rekey(p, p->src_keys.strings[i], &nk)) != 0)
			goto done;
		if (faucet__strarray_append_owned(&p->dst_keys, nk) != 0) {
			free(nk);
			rc = cli_error(CLI_EXIT_FAILED, "out of memory");
			goto done;
		}
	}
	/* Two source keys landing on one destination key (a --row-map onto a
	 * row the source has too) would lose one of them. */
	for (size_t i = 0; i < p->dst_keys.count; i++) {
		if (faucet__strarray_append(&sorted, p->dst_keys.strings[i]) != 0) {
			rc = cli_error(CLI_EXIT_FAILED, "out of memory");
			goto done;
		}
	}
	qsort(sorted.strings, sorted.count, sizeof(char *), cmp_str);
	for (size_t i = 1; i < sorted.count; i++) {
		if (strcmp(sorted.strings[i - 1], sorted.strings[i]) == 0) {
			rc = cli_usage_error(p->command, "two keys of '%s' would both become '%s' "
					     "(check --row-map); nothing was written", p->src,
					     sorted.strings[i]);
			goto done;
		}
	}
	{
		faucet_strarray existing = {NULL, 0};

		if ((rc = data_keys(p, s, dp, &existing)) != 0)
			goto done;
		if (existing.count > 0 && !p->replace) {
			rc = cli_error(CLI_EXIT_USAGE,
				       "%s: pipeline '%s' already has %zu data key%s in %s (first: "
				       "%s); give --replace to overwrite them; nothing was written",
				       p->command, p->dst, existing.count,
				       existing.count == 1 ? "" : "s", p->ctx->store_label,
				       existing.strings[0]);
			faucet_strarray_dispose(&existing);
			goto done;
		}
		for (size_t i = 0; i < existing.count && rc == 0; i++) {
			if (!in_sorted(&sorted, existing.strings[i]) &&
			    faucet__strarray_append(&p->stale, existing.strings[i]) != 0)
				rc = cli_error(CLI_EXIT_FAILED, "out of memory");
		}
		faucet_strarray_dispose(&existing);
	}
done:
	faucet_strarray_dispose(&sorted);
	free(sp);
	free(dp);
	return rc;
}

/* The lease of a namespace is its run pipeline's: the first key segment. */
static const char *lease_pipeline(const pcopy *p, int dst)
{
	return p->tenant != NULL ? p->tenant : dst ? p->dst : p->src;
}

/* Both leases, in byte order of the pipelines' names; the run that records
 * is the destination's.  *other is the run that only holds a lease (NULL
 * when one lease covers both: a tenant's pipelines share it). */
static int take_leases(pcopy *p, faucet_store *s, const char *cmdline, cli_write_run *w,
		       faucet_run **other)
{
	const char *lp_src = lease_pipeline(p, 0), *lp_dst = lease_pipeline(p, 1);
	faucet_run_options o = FAUCET_RUN_OPTIONS_INIT;
	int cmp = strcmp(lp_src, lp_dst), rc;

	*other = NULL;
	o.no_lease = 1;
	o.exclusive = 1;
	o.pipeline_level = 1;
	o.command = cmdline;
	if (cmp < 0 && faucet_run_begin(other, s, lp_src, &o) != 0)
		return cli_fail(faucet_error_last()->code == FAUCET_EBUSY ? CLI_EXIT_BUSY
									 : CLI_EXIT_FAILED,
				"%s", p->command);
	rc = cli_write_run_begin_in(p->ctx, s, cmdline, lp_dst, NULL, CLI_RUN_EXCLUSIVE, w);
	if (rc == 0 && cmp > 0 && faucet_run_begin(other, s, lp_src, &o) != 0)
		rc = cli_fail(faucet_error_last()->code == FAUCET_EBUSY ? CLI_EXIT_BUSY
								       : CLI_EXIT_FAILED,
			      "%s", p->command);
	if (rc != 0) {
		if (w->run != NULL)
			(void)cli_write_run_end(w, 0, "could not take both pipelines' leases");
		if (*other != NULL)
			(void)faucet_run_end(*other, FAUCET_RUN_OK, 0, NULL);
		faucet_run_free(*other);
		*other = NULL;
	}
	return rc;
}

/* The writes: the copies, the stale destination keys, then (a move) the
 * source keys - each only when it still holds what was read. */
static int apply(pcopy *p, faucet_run *r, faucet_strarray *deleted, const char **failed_key)
{
	*failed_key = NULL;
	for (size_t i = 0; i < p->dst_keys.count; i++) {
		if (faucet_run_put(r, p->dst_keys.strings[i], p->src_vals[i]) != 0) {
			*failed_key = p->dst_keys.strings[i];
			return -1;
		}
	}
	for (size_t i = 0; i < p->stale.count; i++) {
		if (faucet_run_delete(r, p->stale.strings[i]) != 0) {
			*failed_key = p->stale.strings[i];
			return -1;
		}
		if (faucet__strarray_append(deleted, p->stale.strings[i]) != 0)
			return faucet_error_set(FAUCET_ENOMEM, "out of memory");
	}
	for (size_t i = 0; p->move && i < p->src_keys.count; i++) {
		int done = 0;

		if (faucet_run_compare_and_delete(r, p->src_keys.strings[i], p->src_vals[i],
						  &done) != 0) {
			*failed_key = p->src_keys.strings[i];
			return -1;
		}
		if (!done) {
			*failed_key = p->src_keys.strings[i];
			return faucet_error_set(FAUCET_ECONTENTION, "'%s' changed while the move "
						"ran; it was not deleted",
						p->src_keys.strings[i]);
		}
		if (faucet__strarray_append(deleted, p->src_keys.strings[i]) != 0)
			return faucet_error_set(FAUCET_ENOMEM, "out of memory");
	}
	return 0;
}

static int print_result(pcopy *p, const faucet_strarray *deleted, const cli_write_run *w)
{
	faucet_strarray would = {NULL, 0};
	const faucet_strarray *del = deleted;

	if (p->dry_run) {
		for (size_t i = 0; i < p->stale.count; i++) {
			if (faucet__strarray_append(&would, p->stale.strings[i]) != 0)
				goto oom;
		}
		for (size_t i = 0; p->move && i < p->src_keys.count; i++) {
			if (faucet__strarray_append(&would, p->src_keys.strings[i]) != 0)
				goto oom;
		}
		del = &would;
	}
	if (p->ctx->json) {
		faucet_buf b = FAUCET_BUF_INIT;
		int rc;

		(void)faucet__buf_putc(&b, '{');
		cli_jw_member(&b, "pipeline", 1);
		faucet__json_string(&b, p->src);
		cli_jw_member(&b, "to_pipeline", 0);
		faucet__json_string(&b, p->dst);
		cli_jw_member(&b, "tenant", 0);
		faucet__json_string(&b, p->tenant);
		cli_jw_member(&b, "move", 0);
		(void)faucet__buf_puts(&b, p->move ? "true" : "false");
		cli_jw_member(&b, "dry_run", 0);
		(void)faucet__buf_puts(&b, p->dry_run ? "true" : "false");
		cli_jw_member(&b, "written", 0);
		cli_jw_string_array(&b, &p->dst_keys);
		cli_jw_member(&b, "deleted", 0);
		cli_jw_string_array(&b, del);
		cli_write_run_json(w, &b);
		(void)faucet__buf_putc(&b, '}');
		rc = cli_jw_print(&b);
		faucet_strarray_dispose(&would);
		return rc != 0 ? CLI_EXIT_FAILED : CLI_EXIT_OK;
	}
	printf("%s%s pipeline '%s' to '%s'%s%s in %s: %zu key%s %s, %zu key%s %s\n",
	       p->dry_run ? "dry run: " : "", p->move ? "move" : "copy", p->src, p->dst,
	       p->tenant ? " of tenant " : "", p->tenant ? p->tenant : "", p->ctx->store_label,
	       p->dst_keys.count, p->dst_keys.count == 1 ? "" : "s",
	       p->dry_run ? "would be written" : "written", del->count,
	       del->count == 1 ? "" : "s", p->dry_run ? "would be deleted" : "deleted");
	for (size_t i = 0; i < p->dst_keys.count; i++)
		printf("%s: %s -> %s\n", p->dry_run ? "would write" : "written",
		       p->src_keys.strings[i], p->dst_keys.strings[i]);
	for (size_t i = 0; i < del->count; i++)
		printf("%s: %s\n", p->dry_run ? "would delete" : "deleted", del->strings[i]);
	if (p->dry_run)
		printf("nothing was written\n");
	faucet_strarray_dispose(&would);
	return CLI_EXIT_OK;
oom:
	faucet_strarray_dispose(&would);
	return cli_error(CLI_EXIT_FAILED, "out of memory");
}

static int execute(pcopy *p)
{
	faucet_strarray deleted = {NULL, 0};
	const char *cmdline = p->move ? "faucet state move" : "faucet state copy";
	cli_write_run w;
	faucet_run *other = NULL;
	faucet_store *s = NULL;
	const char *failed_key = NULL;
	int rc;

	memset(&w, 0, sizeof(w));
	if (!p->dry_run)
		cli_note_write();
	rc = cli_open_store_existing(p->ctx, &s);
	if (rc != 0)
		return rc;
	/* Under both leases, so no run of either pipeline writes between the
	 * read and the writes (a dry run takes none: it writes nothing). */
	if (!p->dry_run)
		rc = take_leases(p, s, cmdline, &w, &other);
	if (rc == 0)
		rc = plan(p, s);
	if (rc == 0 && p->dry_run) {
		rc = print_result(p, &deleted, NULL);
	} else if (rc == 0) {
		int ok = apply(p, w.run, &deleted, &failed_key) == 0;
		char *msg = NULL;

		if (!ok) {
			msg = faucet__sprintf("%s stopped at '%s': %s", cmdline, failed_key,
					  faucet_error_last()->message);
			rc = cli_error(CLI_EXIT_FAILED, "%s", msg ? msg : "out of memory");
		}
		if (cli_write_run_end(&w, ok, msg) != 0 && rc == 0)
			rc = CLI_EXIT_FAILED;
		/* What a failed copy or move wrote is its run: say how to take it
		 * back (a successful one prints its undo command itself). */
		if (!ok && w.ended && faucet_run_changed(w.run) > 0)
			fprintf(stderr, "faucet: what was written is run %s; undo: faucet state undo "
				"%s %s\n", faucet_run_id(w.run), w.pipeline, faucet_run_id(w.run));
		free(msg);
		if (rc == 0)
			rc = print_result(p, &deleted, &w);
	} else if (w.run != NULL) {
		(void)cli_write_run_end(&w, 1, NULL); /* nothing written: no trace */
	}
	if (other != NULL) {
		if (faucet_run_end(other, FAUCET_RUN_OK, 0, NULL) != 0 && rc == 0)
			rc = cli_fail(CLI_EXIT_FAILED, "%s: releasing the lease of pipeline '%s'",
				      p->command, lease_pipeline(p, 0));
		faucet_run_free(other);
	}
	cli_write_run_dispose(&w);
	faucet_strarray_dispose(&deleted);
	faucet_store_free(s);
	return rc;
}

/* Both commands' arguments: copy takes NEW from --to-pipeline, move as its
 * second positional. */
static int pipeline_main(cli_context *ctx, int argc, char **argv, int move)
{
	enum { OPT_TO_PIPELINE = 1, OPT_ROW_MAP, OPT_TENANT, OPT_REPLACE, OPT_DRY_RUN };
	static const cli_option opts[] = {
		{"to-pipeline", 0, 1, OPT_TO_PIPELINE},
		{"row-map", 0, 1, OPT_ROW_MAP},
		CLI_TENANT_OPTION(OPT_TENANT),
		{"replace", 0, 0, OPT_REPLACE},
		{"dry-run", 0, 0, OPT_DRY_RUN},
		{NULL, 0, 0, 0},
	};
	const char *arg;
	pcopy p;
	cli_args it;
	int id, rc = 0;

	memset(&p, 0, sizeof(p));
	p.ctx = ctx;
	p.move = move;
	p.command = move ? "state move" : "state copy";
	cli_args_init(&it, ctx, p.command, argc, argv);
	while (rc == 0 && (id = cli_args_next(&it, move ? opts + 1 : opts, &arg)) != CLI_ARG_END) {
		if (id == CLI_ARG_ERROR)
			rc = CLI_EXIT_USAGE;
		else if (id == CLI_ARG_HELP) {
			pcopy_dispose(&p);
			return cli_print_command_help(move ? "state move" : "state copy --to-pipeline");
		} else if (id == OPT_TO_PIPELINE)
			p.dst = arg;
		else if (id == OPT_ROW_MAP)
			rc = add_row_map(&p, arg);
		else if (id == OPT_TENANT)
			rc = cli_tenant_check(p.command, arg, &p.tenant);
		else if (id == OPT_REPLACE)
			p.replace = 1;
		else if (id == OPT_DRY_RUN)
			p.dry_run = 1;
		else if (p.src == NULL)
			p.src = arg;
		else if (move && p.dst == NULL)
			p.dst = arg;
		else
			rc = cli_usage_error(p.command, "unexpected argument '%s'", arg);
	}
	if (rc == 0 && p.src == NULL)
		rc = cli_usage_error(p.command, "missing PIPELINE");
	if (rc == 0 && p.dst == NULL)
		rc = cli_usage_error(p.command, move ? "missing NEW (the pipeline's new name)"
						     : "missing --to-pipeline NEW");
	if (rc == 0)
		rc = check_name(p.command, "pipeline", p.src);
	if (rc == 0)
		rc = check_name(p.command, "pipeline", p.dst);
	if (rc == 0 && strcmp(p.src, p.dst) == 0)
		rc = cli_usage_error(p.command, "PIPELINE and NEW are both '%s' (to rename rows "
				     "within one pipeline, move it to a new name)", p.src);
	if (rc == 0)
		rc = execute(&p);
	pcopy_dispose(&p);
	return rc;
}

int cli_state_copy_pipeline(cli_context *ctx, int argc, char **argv)
{
	return pipeline_main(ctx, argc, argv, 0);
}

int cli_state_move(cli_context *ctx, int argc, char **argv)
{
	return pipeline_main(ctx, argc, argv, 1);
}
