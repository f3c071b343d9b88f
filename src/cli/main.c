/* sftrace: entry point and subcommand dispatch. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "lib/util.h"

#ifndef SFTRACE_VERSION
#define SFTRACE_VERSION "0.1.0"
#endif


static const struct sf_command commands[] = {
	{"record", "run a command and record every instrumented function call", cmd_record},
	{"filter", "choose which functions to record", cmd_filter},
	{"convert", "convert a log to Perfetto, Parquet (pola), Chrome JSON or folded stacks", cmd_convert},
	{"replay", "the calls in order, nested, with durations (uftrace's layout)", cmd_replay},
	{"graph", "who calls a function, and the aggregated graph of what it calls", cmd_graph},
	{"info", "what a recording holds: command, machine, options, objects, threads, counters", cmd_info},
	{"report", "per-function time table in the terminal; --diff compares two recordings", cmd_report},
	{"query", "SQL (SQLite) over the frames, functions and threads of a recording", cmd_query},
	{"flamegraph", "interactive SVG flame graph", cmd_flamegraph},
	{"memory", "heap analysis: peak, allocation sites, temporaries, leaks per stage", cmd_memory},
	{"dump", "print a log's header and events as text", cmd_dump},
	{"snapshot", "ask a process recorded with --ring for a snapshot of its rings", cmd_snapshot},
	{"resume", "switch tracing on in a process recorded with --paused", cmd_resume},
	{"pause", "switch tracing off in a process recorded with --paused", cmd_pause},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: sftrace COMMAND [OPTIONS] ...\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].run)
			fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\n'sftrace COMMAND --help' describes a command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("sftrace %s\n", SFTRACE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].run && !strcmp(argv[1], commands[i].name)) {
			/* A reader that leaves early (`| head`) ends the output: a
			 * write then fails with EPIPE, the command stops and exits 0
			 * quietly (sf_stdout_reader_gone), cleaning up as on any
			 * failure, instead of dying mid-line of SIGPIPE (141).
			 * record leaves the disposition alone: its program
			 * inherits what the shell gave. */
			if (commands[i].run != cmd_record)
				signal(SIGPIPE, SIG_IGN);
			int rc = commands[i].run(argc - 1, argv + 1);
			return rc && sf_stdout_reader_gone() ? 0 : rc;
		}
	sf_error("unknown command '%s' (try 'sftrace --help')", argv[1]);
	return 2;
}
