/*
 * cli.c - the one command-line parser of every `mallock` command: getopt_long
 * over a command's option table (cli.h), the --help text written from the
 * same table, and the one form of a usage error: "mallock CMD: what is
 * wrong" and "try 'mallock CMD --help'" on stderr, exit status
 * CLI_EXIT_USAGE. The same table writes the man page's OPTIONS list
 * (cli_man), so --help and the man page cannot drift either.
 *
 * getopt_long's tables are built in static buffers when a parse starts:
 * one parse at a time, as getopt itself.
 */
#define _GNU_SOURCE /* getopt_long */
#include "cli.h"

#include <ctype.h>
#include <getopt.h>
#include <stdarg.h>
#include <string.h>

#define CLI_MAX_OPTS 40
/* The column the options' descriptions start at in --help. */
#define CLI_HELP_COL 28

static struct option cli_long[CLI_MAX_OPTS + 1];
static char cli_short[2 * CLI_MAX_OPTS + 4];

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "mallock %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\ntry 'mallock %s --help'\n", cmd);
	return CLI_EXIT_USAGE;
}

int cli_number(const char *cmd, const char *opt, const char *s, long min,
               long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < min || v > max) {
		cli_usage_error(cmd,
		                "%s '%s': not a whole number from %ld to %ld",
		                opt, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

/* An option's name as the help and the errors show it: "-o, --output",
 * "--top", "-h". */
static int opt_label(const cli_opt_t *o, char *buf, size_t n)
{
	int k = 0;
	if (o->key > 0 && o->key < 256 && o->name)
		k = snprintf(buf, n, "-%c, --%s", o->key, o->name);
	else if (o->name)
		k = snprintf(buf, n, "--%s", o->name);
	else
		k = snprintf(buf, n, "-%c", o->key);
	if (o->arg && o->value)
		k += snprintf(buf + k, n - (size_t)k, "%s%s",
		              o->name ? "=" : " ", o->value);
	return k;
}

void cli_help(const cli_cmd_t *c, FILE *o)
{
	const char *u = c->usage;
	for (int first = 1; u; first = 0) {
		const char *nl = strchr(u, '\n');
		int len = nl ? (int)(nl - u) : (int)strlen(u);
		fprintf(o, "%s mallock %s %.*s\n", first ? "usage:" : "      ",
		        c->name, len, u);
		u = nl ? nl + 1 : NULL;
	}
	if (c->intro)
		fputs(c->intro, o);
	for (const cli_opt_t *p = c->opts; p->name || p->key; p++) {
		char label[96];
		int k = opt_label(p, label, sizeof label);
		fprintf(o, "  %s", label);
		const char *h = p->help;
		if (k + 2 >= CLI_HELP_COL - 1) {
			fputc('\n', o);
			k = -2;
		}
		for (int pad = CLI_HELP_COL - 2 - k; h; pad = CLI_HELP_COL) {
			const char *nl = strchr(h, '\n');
			int len = nl ? (int)(nl - h) : (int)strlen(h);
			fprintf(o, "%*s%.*s\n", pad, "", len, h);
			h = nl ? nl + 1 : NULL;
		}
	}
	if (c->outro)
		fputs(c->outro, o);
}

int cli_help_man;

/* s (n bytes) as groff text: a backslash is \e, a '-' in an option's name
 * \- (a minus sign, not a hyphen), a line never starts with a control
 * character. */
static void man_text(const char *s, size_t n, int dashes, FILE *o)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\')
			fputs("\\e", o);
		else if (s[i] == '-' && dashes)
			fputs("\\-", o);
		else
			fputc(s[i], o);
	}
}

void cli_man(const cli_cmd_t *c, FILE *o)
{
	for (const cli_opt_t *p = c->opts; p->name || p->key; p++) {
		fputs(".TP\n", o);
		if (p->key > 0 && p->key < 256)
			fprintf(o, "\\fB\\-%c\\fR%s", p->key,
			        p->name ? ", " : "");
		if (p->name) {
			fputs("\\fB", o);
			man_text("--", 2, 1, o);
			man_text(p->name, strlen(p->name), 1, o);
			fputs("\\fR", o);
		}
		if (p->arg && p->value) {
			fputs(p->name ? "=\\fI" : " \\fI", o);
			man_text(p->value, strlen(p->value), 0, o);
			fputs("\\fR", o);
		}
		fputs("\n\\&", o);
		/* "this help" is --help's own line; a man page says more. */
		if (p->key == 'h') {
			fputs("print the command's usage and options, and "
			      "exit\n",
			      o);
			continue;
		}
		for (const char *h = p->help; h;) {
			const char *nl = strchr(h, '\n');
			man_text(h, nl ? (size_t)(nl - h) : strlen(h), 0, o);
			h = nl ? nl + 1 : NULL;
			if (h)
				fputc(' ', o);
		}
		fputc('\n', o);
	}
}

/* The table as getopt_long wants it, into cli_long and cli_short. */
static void build(const cli_cmd_t *c)
{
	size_t nl = 0, ns = 0;
	/* '+': stop at the first operand; ':': a missing value is ':' */
	if (c->in_order)
		cli_short[ns++] = '+';
	cli_short[ns++] = ':';
	for (const cli_opt_t *p = c->opts;
	     (p->name || p->key) && nl < CLI_MAX_OPTS; p++) {
		if (p->name)
			cli_long[nl++] = (struct option){
			    p->name, p->arg ? required_argument : no_argument,
			    NULL, p->key};
		if (p->key > 0 && p->key < 256) {
			cli_short[ns++] = (char)p->key;
			if (p->arg)
				cli_short[ns++] = ':';
		}
	}
	cli_long[nl] = (struct option){0};
	cli_short[ns] = '\0';
}

/* Whether key is one of c's options. */
static int known(const cli_cmd_t *c, int key)
{
	for (const cli_opt_t *p = c->opts; p->name || p->key; p++)
		if (p->key == key)
			return 1;
	return 0;
}

/* The option argv[optind - 1] named, without its "=VALUE". */
static const char *bad_word(char **argv, char *buf, size_t n)
{
	const char *w = argv[optind - 1];
	snprintf(buf, n, "%.*s", (int)strcspn(w, "="), w);
	return buf;
}

int cli_next(cli_t *p, int argc, char **argv)
{
	const cli_cmd_t *c = p->cmd;
	if (!p->started) {
		build(c);
		p->started = 1;
		optind = 0; /* glibc: a full reset, '+' included */
		opterr = 0;
	}
	int k = getopt_long(argc, argv, cli_short, cli_long, NULL);
	char w[64];
	if (k == '?') {
		/* optopt: a known option's key when it was given a value it
		 * takes none (--all=1); an unknown letter; 0 for an unknown
		 * long option. */
		p->status = CLI_EXIT_USAGE;
		if (optopt && known(c, optopt))
			cli_usage_error(c->name, "option '%s' takes no value",
			                bad_word(argv, w, sizeof w));
		else if (optopt)
			cli_usage_error(c->name, "unknown option '-%c'",
			                optopt);
		else
			cli_usage_error(c->name, "unknown option '%s'",
			                bad_word(argv, w, sizeof w));
		return CLI_DONE;
	}
	if (k == ':') {
		/* The option is the last word: "-o" or "--output". */
		p->status = CLI_EXIT_USAGE;
		cli_usage_error(c->name, "option '%s' needs a value",
		                bad_word(argv, w, sizeof w));
		return CLI_DONE;
	}
	if (k == 'h') {
		if (cli_help_man)
			cli_man(c, stdout);
		else
			cli_help(c, stdout);
		p->status = 0;
		return CLI_DONE;
	}
	if (k != -1)
		return k;
	int n = argc - optind;
	if (n < c->min_operands) {
		p->status = cli_usage_error(c->name, "missing %s", c->operands);
		return CLI_DONE;
	}
	if (c->max_operands >= 0 && n > c->max_operands) {
		p->status = cli_usage_error(c->name, "extra operand '%s'",
		                            argv[optind + c->max_operands]);
		return CLI_DONE;
	}
	return -1;
}

int cli_bad_value(const char *cmd, const char *opt, const char *value,
                  const char *want)
{
	return cli_usage_error(cmd, "%s '%s': %s", opt, value, want);
}
