/*
 * dashboard.c - the static files of the dashboard `faucet serve` answers at
 * /, /app.js and /style.css (src/serve/dashboard/, compiled in by
 * cmake/embed.cmake).  The page is plain JavaScript over the /v1/ API; it
 * holds no data itself, so it is served without a token.
 *
 * Every file goes with a strict Content-Security-Policy: only this origin,
 * no inline script or style, no frame, no plug-in.
 */
#include <string.h>

#include "serve.h"

extern const unsigned char serve_dashboard_index_html[], serve_dashboard_app_js[],
	serve_dashboard_style_css[];
extern const size_t serve_dashboard_index_html_len, serve_dashboard_app_js_len,
	serve_dashboard_style_css_len;

#define DASHBOARD_CSP                                                                         \
	"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "          \
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "        \
	"frame-ancestors 'none'"

int serve_dashboard(const char *method, const char *url, serve_reply *out)
{
	static const struct {
		const char *path;
		const char *type;
		const unsigned char *data;
		const size_t *len;
	} files[] = {
		{"/", "text/html; charset=utf-8", serve_dashboard_index_html,
		 &serve_dashboard_index_html_len},
		{"/index.html", "text/html; charset=utf-8", serve_dashboard_index_html,
		 &serve_dashboard_index_html_len},
		{"/app.js", "text/javascript; charset=utf-8", serve_dashboard_app_js,
		 &serve_dashboard_app_js_len},
		{"/style.css", "text/css; charset=utf-8", serve_dashboard_style_css,
		 &serve_dashboard_style_css_len},
	};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		faucet_buf b = FAUCET_BUF_INIT;

		if (strcmp(url, files[i].path) != 0)
			continue;
		if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
			serve_error(out, 405, "invalid", "%s is not allowed on %s (allowed: GET)", method,
				    url);
			out->allow = "GET, HEAD";
			return 1;
		}
		if (faucet__buf_put(&b, (const char *)files[i].data, *files[i].len) != 0) {
			faucet__buf_dispose(&b);
			serve_error(out, 500, "out-of-memory", "out of memory");
			return 1;
		}
		serve_json(out, 200, &b);
		if (out->status == 200) {
			out->type = files[i].type;
			out->csp = DASHBOARD_CSP;
		}
		return 1;
	}
	return 0;
}
