/* The sftrace subcommands: one file per command (cmd_<name>.c), each with
 * one entry point. main.c dispatches on argv[1]. */
#ifndef SFTRACE_CLI_COMMANDS_H
#define SFTRACE_CLI_COMMANDS_H

struct sf_command {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv); /* argv[0] is the command name */
};

int cmd_record(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);
int cmd_filter(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_memory(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_resume(int argc, char **argv); /* cmd_switch.c */
int cmd_pause(int argc, char **argv);  /* cmd_switch.c */

#endif
