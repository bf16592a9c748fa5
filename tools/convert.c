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

#define OPT_THREADS 1
#define OPT_SETTING 256 /* + the row of channel_settings[] */

/* "  --csv-header MODE" and its help, from the row of channel_settings[] */
static void usage_setting(FILE *out, const struct channel_setting *s)
{
	char left[64], help[512];
	const char *def = channel_setting_default_doc(s);

	snprintf(left, sizeof(left), "  --%s %s", s->option, s->metavar);
	snprintf(help, sizeof(help), "%s%s%s%s", s->help,
		 *def ? " (default " : "", def, *def ? ")" : "");
	util_help_row(out, left, help);
}

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
		"channel with --convert csv or --convert libsvm does, with the "
		"same options;\n"
		"dump prints RecordIO Records as JSON lines.  IN and OUT "
		"default to standard\n"
		"input and output.\n"
		"\n");
	for (unsigned i = 0; i < channel_settings_count; i++)
		if (channel_settings[i].conversion)
			usage_setting(out, &channel_settings[i]);
	util_help_row(out, "  --threads N",
		      "converting threads (default: one per core)");
	util_help_row(out, "  -h, --help", "print this help");
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

/* ---- the file, as the stage below the converter ---- */

struct file_source {
	struct channel_stage stage; /* first */
	int fd;
	const char *name;
	char *buf;
	struct iovec iov;
	int error; /* errno of a failed read */
};

static int file_read(struct channel_stage *st, uint64_t offset, size_t size,
		     struct channel_view *view, struct channel_origin *origin)
{
	struct file_source *fs = (struct file_source *)st;
	ssize_t n;

	(void)offset; /* (read in turn only: the converter's feeder) */
	if (!origin)
		return EINVAL;
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

static void file_release(struct channel_stage *st, struct channel_view *view)
{
	(void)st;
	view->count = 0;
	view->bytes = 0;
}

static uint64_t file_position(struct channel_stage *st)
{
	(void)st;
	return 0; /* not asked for anything but reads in turn */
}

static void file_destroy(struct channel_stage *st)
{
	(void)st; /* on convert()'s stack */
}

static const struct channel_stage_ops file_ops = {
    .read = file_read,
    .release = file_release,
    .position = file_position,
    .destroy = file_destroy,
};

static int convert(const struct channel_convert_conf *conf, unsigned threads,
		   int in, const char *in_name, int out, const char *out_name)
{
	struct file_source fs = {
	    .stage = {.ops = &file_ops}, .fd = in, .name = in_name};
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
	cv = channel_converter_create(conf, &fs.stage, "", threads);
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
		wrc = util_writev_all(out, view.iov, view.count);
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

/* room for getopt's table: every setting (fewer than 32: the given
 * mask), the tool's own two, the end */
#define OPTIONS_MAX (32 + 3)

/* getopt's table into o: the conversion's rows of channel_settings[],
 * then the tool's own */
static void long_options(struct option o[OPTIONS_MAX])
{
	unsigned n = 0;

	memset(o, 0, OPTIONS_MAX * sizeof(*o));
	for (unsigned i = 0; i < channel_settings_count && n + 3 < OPTIONS_MAX;
	     i++) {
		if (!channel_settings[i].conversion)
			continue;
		o[n++] = (struct option){channel_settings[i].option,
					 required_argument, NULL,
					 OPT_SETTING + (int)i};
	}
	o[n++] =
	    (struct option){"threads", required_argument, NULL, OPT_THREADS};
	o[n++] = (struct option){"help", no_argument, NULL, 'h'};
}

/* One option into spec or *threads: 0, or exit status 2 with a message */
static int parse_option(struct channel_spec *spec, unsigned *threads, int opt,
			const char *val)
{
	const struct channel_setting *s;
	char shown[80];
	char err[256];
	uint64_t v;

	if (opt == OPT_THREADS) {
		if (util_parse_uint(val, 1, 64, &v))
			return die_usage("--threads must be 1 to 64 (got "
					 "'%s')",
					 val);
		*threads = (unsigned)v;
		return 0;
	}
	if (opt < OPT_SETTING ||
	    opt >= OPT_SETTING + (int)channel_settings_count)
		return die_usage("unknown option");
	s = &channel_settings[opt - OPT_SETTING];
	snprintf(shown, sizeof(shown), "--%s", s->option);
	switch (channel_setting_parse(s, val, shown, spec, err, sizeof(err))) {
	case 0:
		return 0;
	case ENOMEM:
		return die_usage("out of memory");
	default:
		return die_usage("%s", err);
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
	struct channel_spec spec;
	struct option options[OPTIONS_MAX];
	unsigned threads = 0;
	const char *cmd, *in_path, *out_path;
	enum channel_convert_format format;
	char msg[256];
	int opt, in, out, rc;

	channel_spec_init(&spec);
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
	spec.convert.format = format;
	long_options(options);
	optind = 2;
	opterr = 0; /* one line, ours */
	while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
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
		rc = parse_option(&spec, &threads, opt, optarg);
		if (rc)
			return rc;
	}
	if (argc - optind > 2)
		return die_usage("too many arguments: [IN [OUT]]");
	/* the same checks as a mounted channel's, with the command as its
	 * --convert */
	if (format != CHANNEL_CONVERT_NONE &&
	    channel_spec_check(&spec, CHANNEL_SYNTAX_CLI, msg, sizeof(msg)))
		return die_usage("%s", msg);
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
	rc = convert(&spec.convert, threads, in,
		     in == STDIN_FILENO ? "stdin" : in_path, out,
		     out == STDOUT_FILENO ? "stdout" : out_path);
	if (out != STDOUT_FILENO && close(out) != 0 && !rc) {
		fprintf(stderr, PROG ": writing %s failed: %s\n", out_path,
			util_strerror(errno, msg, sizeof(msg)));
		rc = 1;
	}
	return rc;
}
