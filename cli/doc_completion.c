/*
 * `help --format bash`: the bash completion script, written from the tables
 * `--help` prints (commands.c), so that it completes exactly the commands,
 * sub-commands and options the help names. The values that live elsewhere
 * are asked of the program itself, quietly: job names (`jobs --names`, the
 * program's registry, no database), schedule names (`schedule list --names`)
 * and recent execution ids (`executions --ids`). One script serves cbatch and
 * every job program (`complete -F _cbatch PROGRAM`): it calls the program
 * being completed, with the --db the line gives.
 */
#include "cli_internal.h"

#include <stdio.h>
#include <string.h>

/* Whether @p arg is a choice of words ("run-once|skip"), not a value's name. */
static int is_choice(const char *arg)
{
	if (!arg || !strchr(arg, '|'))
		return 0;
	for (const char *p = arg; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || *p == '-' || *p == '|'))
			return 0;
	return 1;
}

/* Print @p choice ("run-once|skip") as words ("run-once skip"). */
static void words_of(FILE *f, const char *choice)
{
	for (; *choice; choice++)
		fputc(*choice == '|' ? ' ' : *choice, f);
}

/* The options of @p b for sub-command @p sub (NULL: the command's own). */
static void options_of(FILE *f, const struct cb__cli_builtin *b, const char *sub)
{
	int first = 1;

	for (size_t k = 0; b->options && b->options[k].name; k++) {
		const struct cb__cli_option *o = &b->options[k];

		if (sub ? !(o->sub && cb__cli_word_in(o->sub, sub)) : o->sub != NULL)
			continue;
		fprintf(f, "%s%s", first ? "" : " ", o->name);
		first = 0;
	}
}

/* Every option that takes a value, once: those skip their value when the
 * line is read, and complete it when it is the word being completed (a value
 * of the user's own, a number or a name, completes to nothing). */
static void valued(FILE *f)
{
	char seen[2048] = " ", plain[2048] = "";
	const struct cb__cli_option *lists[CB__NBUILTINS + 1];

	lists[0] = cb__cli_global_options;
	for (size_t i = 0; i < CB__NBUILTINS; i++)
		lists[i + 1] = cb__cli_builtins[i].options;
	fputs("\tcase $prev in\n", f);
	for (size_t i = 0; i <= CB__NBUILTINS; i++) {
		for (size_t k = 0; lists[i] && lists[i][k].name; k++) {
			const struct cb__cli_option *o = &lists[i][k];
			char key[80];

			snprintf(key, sizeof(key), "%s ", o->name);
			if (!o->arg || strstr(seen, key) ||
			    strlen(seen) + strlen(key) >= sizeof(seen))
				continue;
			strcat(seen, key);
			if (strcmp(o->name, "--job") == 0) {
				fprintf(f,
					"\t%s) _cbatch_reply \"$(_cbatch_values \"$prog\" jobs "
					"--names)\" ;;\n",
					o->name);
			} else if (is_choice(o->arg)) {
				fprintf(f, "\t%s) _cbatch_reply '", o->name);
				words_of(f, o->arg);
				fputs("' ;;\n", f);
			} else if (strcmp(o->arg, "PATH") == 0) {
				fprintf(f, "\t%s) COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n",
					o->name);
			} else {
				strcat(plain, plain[0] ? " | " : "");
				strcat(plain, o->name);
			}
		}
	}
	fprintf(f, "\t%s) ;;\n\t*) _cbatch_words ;;\n\tesac\n}\n\n", plain);
	/* The same list, for reading the line. */
	fprintf(f, "# The options that take a value.\n_cbatch_valued='%s'\n", seen);
}

void cb__cli_doc_completion(const struct cli *c, FILE *f)
{
	(void)c;
	fputs("# bash completion for cbatch and the job programs built on its CLI.\n"
	      "# Written by `cbatch help --format bash` from the command table; do not edit.\n"
	      "# A job program completes the same way once this file is sourced:\n"
	      "#     complete -F _cbatch myjob\n"
	      "# Job and schedule names and execution ids are asked of the program itself\n"
	      "# (jobs --names, schedule list --names, executions --ids), with the line's\n"
	      "# --db; without a database they are simply not offered.\n\n",
	      f);
	fputs("_cbatch_commands='", f);
	for (size_t i = 0; i < CB__NBUILTINS; i++)
		fprintf(f, "%s%s", i ? " " : "", cb__builtin_name(cb__cli_builtins[i].id));
	fputs("'\n_cbatch_global='", f);
	for (size_t k = 0; cb__cli_global_options[k].name; k++)
		fprintf(f, "%s%s", k ? " " : "", cb__cli_global_options[k].name);
	fputs("'\n\n"
	      "# The words the program prints for a query, on one line each; nothing when it\n"
	      "# fails (no database), and never waiting long for a server.\n"
	      "_cbatch_values()\n"
	      "{\n"
	      "\tlocal prog=$1\n"
	      "\tshift\n"
	      "\tPGCONNECT_TIMEOUT=2 \"$prog\" \"${_cbatch_db[@]}\" \"$@\" 2>/dev/null </dev/null\n"
	      "}\n\n"
	      "_cbatch_reply()\n"
	      "{\n"
	      "\tlocal IFS=$' \\t\\n'\n"
	      "\tCOMPREPLY=($(compgen -W \"$1\" -- \"$cur\"))\n"
	      "}\n\n"
	      "# The options of COMMAND, or of COMMAND SUB-COMMAND.\n"
	      "_cbatch_options()\n"
	      "{\n"
	      "\tcase $1 in\n",
	      f);
	for (size_t i = 0; i < CB__NBUILTINS; i++) {
		const struct cb__cli_builtin *b = &cb__cli_builtins[i];
		const char *name = cb__builtin_name(b->id);
		const char *p = b->subs;

		fprintf(f, "\t'%s') echo '", name);
		options_of(f, b, NULL);
		fputs("' ;;\n", f);
		while (p && *p) {
			char sub[64];
			size_t n = strcspn(p, " ");

			snprintf(sub, sizeof(sub), "%.*s", (int)n, p);
			fprintf(f, "\t'%s %s') echo '", name, sub);
			options_of(f, b, sub);
			fputs("' ;;\n", f);
			p += n;
			while (*p == ' ')
				p++;
		}
	}
	fputs("\tesac\n"
	      "}\n\n"
	      "# The sub-commands of COMMAND.\n"
	      "_cbatch_subs()\n"
	      "{\n"
	      "\tcase $1 in\n",
	      f);
	for (size_t i = 0; i < CB__NBUILTINS; i++)
		if (cb__cli_builtins[i].subs)
			fprintf(f, "\t'%s') echo '%s' ;;\n",
				cb__builtin_name(cb__cli_builtins[i].id), cb__cli_builtins[i].subs);
	fputs("\tesac\n"
	      "}\n\n"
	      "# The positional argument N (from 0) of COMMAND, by its synopsis.\n"
	      "_cbatch_positional()\n"
	      "{\n"
	      "\tcase $1 in\n",
	      f);
	for (size_t i = 0; i < CB__NBUILTINS; i++) {
		const struct cb__cli_builtin *b = &cb__cli_builtins[i];
		const char *syn = b->synopsis + (b->synopsis[0] == '[');
		const char *what = NULL;

		if (b->subs)
			continue;
		if (strncmp(syn, "JOB", 3) == 0)
			what = "_cbatch_values \"$prog\" jobs --names";
		else if (strncmp(syn, "EXECUTION_ID", 12) == 0)
			what = "_cbatch_values \"$prog\" executions --ids --limit 50";
		else if (strncmp(syn, "COMMAND", 7) == 0)
			what = "echo \"$_cbatch_commands\"";
		if (what)
			fprintf(f, "\t'%s') [[ $2 == 0 ]] && %s ;;\n", cb__builtin_name(b->id),
				what);
	}
	/* Every sub-command of `schedule` but add (a new name) and list names a
	 * schedule. */
	fputs("\t'schedule') [[ $2 == 1 && $3 != add && $3 != list ]] &&\n"
	      "\t\t_cbatch_values \"$prog\" schedule list --names ;;\n"
	      "\tesac\n"
	      "}\n\n",
	      f);
	fputs("# The completion function: complete -F _cbatch PROGRAM.\n"
	      "_cbatch()\n"
	      "{\n"
	      "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev= prog=${COMP_WORDS[0]}\n"
	      "\tlocal cmd= w i\n"
	      "\tlocal -a pos=() _cbatch_db=()\n"
	      "\tCOMPREPLY=()\n"
	      "\t((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}\n"
	      "\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
	      "\t\tw=${COMP_WORDS[i]}\n"
	      "\t\tcase $w in\n"
	      "\t\t--db)\n"
	      "\t\t\t((i + 1 < COMP_CWORD)) && _cbatch_db=(--db \"$(_cbatch_dequote "
	      "\"${COMP_WORDS[i + 1]}\")\")\n"
	      "\t\t\t((i++)) ;;\n"
	      "\t\t--db=*) _cbatch_db=(\"--db=$(_cbatch_dequote \"${w#--db=}\")\") ;;\n"
	      "\t\t-*) [[ \" $_cbatch_valued \" == *\" $w \"* ]] && ((i++)) ;;\n"
	      "\t\t*)\n"
	      "\t\t\tif [[ -z $cmd ]]; then cmd=$w; else pos+=(\"$w\"); fi ;;\n"
	      "\t\tesac\n"
	      "\tdone\n",
	      f);
	valued(f);
	fputs("\n_cbatch_dequote()\n"
	      "{\n"
	      "\tlocal w=$1\n"
	      "\tif [[ $w == \\'*\\' || $w == \\\"*\\\" ]]; then w=${w:1:${#w}-2}; fi\n"
	      "\tprintf '%s' \"$w\"\n"
	      "}\n\n",
	      f);
	/* The rest of _cbatch, after its value cases; it reads _cbatch's locals. */
	fputs("_cbatch_words()\n"
	      "{\n"
	      "\tlocal sub= opts words\n"
	      "\tif [[ -z $cmd ]]; then\n"
	      "\t\tif [[ $cur == -* ]]; then\n"
	      "\t\t\t_cbatch_reply \"$_cbatch_global\"\n"
	      "\t\t\treturn\n"
	      "\t\tfi\n"
	      "\t\twords=$_cbatch_commands\n"
	      "\t\t# A job program's own commands, from its help (no database).\n"
	      "\t\t[[ ${prog##*/} != cbatch ]] && words+=\" $(\"$prog\" --help 2>/dev/null </dev/null |\n"
	      "\t\t\tsed -n '/^Commands of this program:/,/^$/s/^  \\([^ ]*\\).*/\\1/p')\"\n"
	      "\t\t_cbatch_reply \"$words\"\n"
	      "\t\treturn\n"
	      "\tfi\n"
	      "\t[[ -n $(_cbatch_subs \"$cmd\") && ${#pos[@]} -gt 0 ]] && sub=${pos[0]}\n"
	      "\tif [[ $cur == -* ]]; then\n"
	      "\t\topts=$(_cbatch_options \"$cmd${sub:+ $sub}\")\n"
	      "\t\t_cbatch_reply \"$opts $_cbatch_global\"\n"
	      "\t\treturn\n"
	      "\tfi\n"
	      "\tif [[ -n $(_cbatch_subs \"$cmd\") && ${#pos[@]} -eq 0 ]]; then\n"
	      "\t\t_cbatch_reply \"$(_cbatch_subs \"$cmd\")\"\n"
	      "\t\treturn\n"
	      "\tfi\n"
	      "\t_cbatch_reply \"$(_cbatch_positional \"$cmd\" ${#pos[@]} \"$sub\")\"\n"
	      "}\n\n"
	      "complete -F _cbatch cbatch\n",
	      f);
}
