/*
 * s3pipe-convert: the mount's conversion as a command, for users who want
 * a converted copy, and its inverse for debugging.
 *
 *   s3pipe-convert csv    [OPTIONS] [IN [OUT]]
 *   s3pipe-convert libsvm --feature-dim N [OPTIONS] [IN [OUT]]
 *   s3pipe-convert dump   [IN [OUT]]
 *
 * csv and libsvm run the same converter as a mounted channel with
 * --convert (channel/convert.c over a file instead of an epoch), so a
 * converted copy and a converted channel over the same bytes are equal
 * byte for byte.  IN and OUT default to stdin and stdout ("-" too).
 * Errors: one line on stderr, exit status 1 (a bad row names the input's
 * line), 2 for a wrong command line.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "channel/convert.h"
#include "channel/record.h"
#include "util/util.h"

#define READ_CHUNK (1u << 20)
#define PROG	   "s3pipe-convert"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: " PROG " csv [OPTIONS] [IN [OUT]]\n"
		"       " PROG " libsvm --feature-dim N [OPTIONS] [IN [OUT]]\n"
		"       " PROG " dump [IN [OUT]]\n"
		"\n"
		"Converts CSV or LibSVM rows to protobuf RecordIO (one "
		"aialgs.data.Record\n"
		"per row, as SageMaker's built-in algorithms read), exactly as "
		"a mounted\n"
		"channel with --convert does; dump prints RecordIO Records as "
		"JSON lines.\n"
		"IN and OUT default to standard input and output.\n"
		"\n"
		"  --csv-label-column N|none  the label's column, from 0 "
		"(default 0)\n"
		"  --csv-header none|skip     skip the first line (default "
		"none)\n"
		"  --on-bad-row fail|skip     stop at a bad row (exit 1), or "
		"count and\n"
		"                             skip it (default fail)\n"
		"  --feature-dim N            libsvm: the tensor's shape; csv: "
		"features\n"
		"                             every row must have\n"
		"  --threads N                converting threads (default: "
		"one per core)\n"
		"  -h, --help                 print this help\n");
}

__attribute__((format(printf, 1, 2))) static int die_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see " PROG " --help)\n");
	return 2;
}

/* ---- the file source ---- */

struct file_source {
	int fd;
	const char *name;
	char *buf;
	struct iovec iov;
	int error; /* errno of a failed read */
};

static int file_read(void *arg, size_t size, struct channel_view *view,
		     struct channel_origin *origin)
{
	struct file_source *fs = arg;
	ssize_t n;

	if (size > READ_CHUNK)
		size = READ_CHUNK;
	do
		n = read(fs->fd, fs->buf, size);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		fs->error = errno;
		return EIO;
	}
	origin->index = 0;
	origin->bucket = NULL;
	origin->key = fs->name;
	fs->iov.iov_base = fs->buf;
	fs->iov.iov_len = (size_t)n;
	view->iov = &fs->iov;
	view->count = n ? 1 : 0;
	view->bytes = (size_t)n;
	return 0;
}

static void file_release(void *arg, struct channel_view *view)
{
	(void)arg;
	view->count = 0;
	view->bytes = 0;
}

static int write_all(int fd, const struct iovec *iov, int count)
{
	for (int i = 0; i < count; i++) {
		const char *p = iov[i].iov_base;
		size_t left = iov[i].iov_len;

		while (left) {
			ssize_t n = write(fd, p, left);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return errno;
			p += n;
			left -= (size_t)n;
		}
	}
	return 0;
}

static int convert(const struct channel_convert_conf *conf, unsigned threads,
		   int in, const char *in_name, int out, const char *out_name)
{
	struct file_source fs = {.fd = in, .name = in_name};
	struct channel_source src = {
	    .read = file_read, .release = file_release, .arg = &fs};
	struct channel_converter *cv;
	struct channel_view view;
	uint64_t pos = 0;
	char msg[128];
	int rc = 0;

	fs.buf = malloc(READ_CHUNK);
	if (!fs.buf) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	cv = channel_converter_create(conf, &src, "", threads);
	if (!cv) {
		fprintf(stderr, PROG ": cannot start: %s\n",
			util_strerror(errno, msg, sizeof(msg)));
		free(fs.buf);
		return 1;
	}
	for (;;) {
		int wrc;

		memset(&view, 0, sizeof(view));
		rc = channel_converter_read(cv, pos, 4u << 20, &view);
		if (rc || view.bytes == 0) {
			channel_converter_release(cv, &view);
			break;
		}
		wrc = write_all(out, view.iov, view.count);
		pos += view.bytes;
		channel_converter_release(cv, &view);
		if (wrc) {
			/* exit now: stopping the converter would wait for
			 * the input's next read, which may never come */
			fprintf(stderr, PROG ": writing %s failed: %s\n",
				out_name, util_strerror(wrc, msg, sizeof(msg)));
			exit(1);
		}
	}
	channel_converter_destroy(cv);
	if (fs.error)
		fprintf(stderr, PROG ": reading %s failed: %s\n", in_name,
			util_strerror(fs.error, msg, sizeof(msg)));
	free(fs.buf);
	return rc ? 1 : 0;
}

static int dump(FILE *in, FILE *out)
{
	char err[512];
	int rc = channel_records_dump(in, out, err, sizeof(err));

	if (!rc && fflush(out) != 0)
		rc = util_fail(err, sizeof(err), EIO, "writing failed");
	if (rc == ENOMEM)
		snprintf(err, sizeof(err), "out of memory");
	if (rc)
		fprintf(stderr, PROG ": %s\n", err);
	return rc ? 1 : 0;
}

enum {
	OPT_LABEL = 256,
	OPT_HEADER,
	OPT_BAD_ROW,
	OPT_FEATURE_DIM,
	OPT_THREADS,
};

static const struct option long_options[] = {
    {"csv-label-column", required_argument, NULL, OPT_LABEL},
    {"csv-header", required_argument, NULL, OPT_HEADER},
    {"on-bad-row", required_argument, NULL, OPT_BAD_ROW},
    {"feature-dim", required_argument, NULL, OPT_FEATURE_DIM},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

struct settings {
	struct channel_convert_conf conf;
	bool label_set, header_set, dim_set;
	unsigned threads;
};

static int parse_option(struct settings *s, int opt, const char *val)
{
	uint64_t v;

	switch (opt) {
	case OPT_LABEL:
		s->label_set = true;
		if (strcasecmp(val, "none") == 0)
			s->conf.label_column = CHANNEL_LABEL_NONE;
		else if (util_parse_uint(val, 0, CHANNEL_LABEL_COLUMN_MAX,
					 &v) == 0)
			s->conf.label_column = (int)v;
		else
			return die_usage("--csv-label-column must be a "
					 "column number from 0, or none "
					 "(got '%s')",
					 val);
		return 0;
	case OPT_HEADER:
		s->header_set = true;
		if (strcasecmp(val, "skip") == 0)
			s->conf.header_skip = true;
		else if (strcasecmp(val, "none") == 0)
			s->conf.header_skip = false;
		else
			return die_usage("--csv-header must be none or skip "
					 "(got '%s')",
					 val);
		return 0;
	case OPT_BAD_ROW:
		if (strcasecmp(val, "skip") == 0)
			s->conf.bad_row_skip = true;
		else if (strcasecmp(val, "fail") == 0)
			s->conf.bad_row_skip = false;
		else
			return die_usage("--on-bad-row must be fail or skip "
					 "(got '%s')",
					 val);
		return 0;
	case OPT_FEATURE_DIM:
		if (util_parse_uint(val, 1, CHANNEL_FEATURE_DIM_MAX, &v))
			return die_usage("--feature-dim must be a number from "
					 "1 to 4294967296 (got '%s')",
					 val);
		s->conf.feature_dim = v;
		s->dim_set = true;
		return 0;
	case OPT_THREADS:
		if (util_parse_uint(val, 1, 64, &v))
			return die_usage("--threads must be 1 to 64 (got "
					 "'%s')",
					 val);
		s->threads = (unsigned)v;
		return 0;
	default:
		return die_usage("unknown option");
	}
}

static int open_in(const char *path)
{
	if (!path || strcmp(path, "-") == 0)
		return STDIN_FILENO;
	return open(path, O_RDONLY | O_CLOEXEC);
}

static int open_out(const char *path)
{
	if (!path || strcmp(path, "-") == 0)
		return STDOUT_FILENO;
	return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

int main(int argc, char **argv)
{
	struct settings s;
	const char *cmd, *in_path, *out_path;
	enum channel_convert_format format;
	char msg[128];
	int opt, in, out, rc;

	memset(&s, 0, sizeof(s));
	util_log_set_prog(PROG);
	if (argc < 2 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "--help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	cmd = argv[1];
	if (strcmp(cmd, "csv") == 0)
		format = CHANNEL_CONVERT_CSV;
	else if (strcmp(cmd, "libsvm") == 0)
		format = CHANNEL_CONVERT_LIBSVM;
	else if (strcmp(cmd, "dump") == 0)
		format = CHANNEL_CONVERT_NONE;
	else
		return die_usage("unknown command '%s': csv, libsvm or dump",
				 cmd);
	channel_convert_conf_init(&s.conf, format);
	optind = 2;
	opterr = 0; /* one line, ours */
	while ((opt = getopt_long(argc, argv, "h", long_options, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return 0;
		}
		if (opt == '?' && optopt > 0 && optopt < 128)
			return die_usage("option '-%c' is unknown or needs a "
					 "value",
					 optopt);
		if (opt == '?')
			return die_usage("option '%s' is unknown or needs a "
					 "value",
					 argv[optind - 1]);
		if (format == CHANNEL_CONVERT_NONE)
			return die_usage("dump takes no options");
		rc = parse_option(&s, opt, optarg);
		if (rc)
			return rc;
	}
	if (argc - optind > 2)
		return die_usage("too many arguments: [IN [OUT]]");
	if (format == CHANNEL_CONVERT_LIBSVM && !s.dim_set)
		return die_usage("libsvm needs --feature-dim N, the number of "
				 "features (the tensor's shape)");
	if (format == CHANNEL_CONVERT_LIBSVM && (s.label_set || s.header_set))
		return die_usage("--csv-label-column and --csv-header are for "
				 "csv");
	in_path = optind < argc ? argv[optind] : NULL;
	out_path = optind + 1 < argc ? argv[optind + 1] : NULL;
	in = open_in(in_path);
	if (in < 0) {
		fprintf(stderr, PROG ": cannot open %s: %s\n", in_path,
			util_strerror(errno, msg, sizeof(msg)));
		return 1;
	}
	out = open_out(out_path);
	if (out < 0) {
		fprintf(stderr, PROG ": cannot create %s: %s\n", out_path,
			util_strerror(errno, msg, sizeof(msg)));
		return 1;
	}
	if (format == CHANNEL_CONVERT_NONE) {
		FILE *fin = fdopen(in, "rb"), *fout = fdopen(out, "wb");

		if (!fin || !fout) {
			fprintf(stderr, PROG ": out of memory\n");
			return 1;
		}
		rc = dump(fin, fout);
		fclose(fin);
		if (fclose(fout) != 0 && !rc) {
			fprintf(stderr, PROG ": writing failed\n");
			rc = 1;
		}
		return rc;
	}
	rc = convert(&s.conf, s.threads, in,
		     in == STDIN_FILENO ? "stdin" : in_path, out,
		     out == STDOUT_FILENO ? "stdout" : out_path);
	if (out != STDOUT_FILENO && close(out) != 0 && !rc) {
		fprintf(stderr, PROG ": writing %s failed: %s\n", out_path,
			util_strerror(errno, msg, sizeof(msg)));
		rc = 1;
	}
	return rc;
}
