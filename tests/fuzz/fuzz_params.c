/*
 * libFuzzer target: the parameter parser and the job key encoder. Input is a
 * list of command-line arguments separated by NUL bytes. Whatever parses
 * must encode canonically and hash; the key must not depend on the order of
 * the arguments (checked by parsing them again in reverse).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cbatch.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void parse_all(cb_params *p, char **args, size_t n, int reverse)
{
	for (size_t i = 0; i < n; i++) {
		cb_error err = CB_ERROR_INIT;

		cb_params_parse_arg(p, args[reverse ? n - 1 - i : i], &err);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *args[64];
	size_t n = 0, start = 0;
	cb_params *a = NULL, *b = NULL;
	cb_error err = CB_ERROR_INIT;
	char ka[CB_JOB_KEY_LEN + 1], kb[CB_JOB_KEY_LEN + 1];

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (size_t i = 0; i <= size && n < 64; i++)
		if (buf[i] == '\0') {
			args[n++] = buf + start;
			start = i + 1;
		}
	if (cb_params_new(&a, &err) == 0 && cb_params_new(&b, &err) == 0) {
		char *canon = NULL;
		size_t len;

		parse_all(a, args, n, 0);
		parse_all(b, args, n, 1);
		if (cb_params_job_key(ka, a, &err) == 0 && cb_params_job_key(kb, b, &err) == 0 &&
		    cb_params_count(a) == cb_params_count(b) && strcmp(ka, kb) != 0) {
			/* Duplicate names keep the first: order can differ then. */
			int dups = 0;

			for (size_t i = 0; i < cb_params_count(a); i++) {
				const char *name, *va, *vb = NULL;
				cb_param_type ta, tb = CB_PARAM_STRING;
				int ia, ib = 0;

				cb_params_at(a, i, &name, &ta, &va, &ia);
				dups |= cb_params_find(b, name, &tb, &vb, &ib) < 0 ||
					strcmp(va, vb) != 0 || ta != tb || ia != ib;
			}
			if (!dups)
				abort();
		}
		if (cb_params_canonical(&canon, &len, a, &err) == 0)
			free(canon);
	}
	cb_params_free(a);
	cb_params_free(b);
	free(buf);
	return 0;
}
