// Package workspace gives every chat thread its own checkout of a configured
// git repository, commits the agent's work there as the bot, pushes it to
// the thread's review branch and diffs it against the default branch.
//
// Layout under Config.DataDir:
//
//	mirrors/<repo>.git          one bare mirror per repository, remote
//	                            branches fetched into refs/remotes/origin/*;
//	                            only what the remote has (fetched objects,
//	                            the bot's pushed commits)
//	threads/<repo>/<id>.git     each thread's own bare repository (CommonDir):
//	                            its branch and commits, a copy of the
//	                            mirror's refs/remotes/origin/*, the mirror's
//	                            objects borrowed as an alternate; see store.go
//	threads/<repo>/<id>.git/worktrees/<name>
//	                            a worktree's admin dir: HEAD, index (GitDir)
//	workspaces/<repo>/<id>      one linked worktree per thread (Root)
//	workspaces/<repo>/.new/<id> where a worktree is checked out before it is
//	                            moved to Root
//	scratch/<repo>/<id>         downloads and tool output (ScratchDir)
//	caches/<repo>               the repository's build and package caches,
//	                            shared by its threads (CacheDir); removed by
//	                            Cleanup with the repository's last workspace
//	meta/<repo>/<id>.json       thread key, branch and last use
//
// where <id> is the branch name without Config.BranchPrefix. A worktree off a
// thread repository that borrows the shared mirror's objects is ready in
// about the time of `git worktree add`, a fraction of a clone, and costs only
// its checked-out files.
//
// Contract:
//   - Branches are named <branch_prefix><platform>-<short thread key>; see
//     BranchName. An existing branch of the thread (local or remote) is always
//     reused, never reset.
//   - Push sends only the thread's branch (under the prefix, never the
//     default branch) and never drops commits of others. A failed push keeps
//     the commits; the next Push sends them. Pushes with the git CLI from a
//     mirror or worktree (the agent's bash) are refused: the mirror's
//     pushurl is a dead end and its pre-push hook says no.
//   - Secrets never reach disk, argv, logs or errors: the mirror's remote URL
//     has no credentials, and the git CLI (fetches and pushes alike) gets the
//     token through an environment-provided credential helper.
//   - Every git process is hermetic (no global/system config, no prompts,
//     no hooks, the bot's identity, only a short allow-list of the bot's
//     environment) and every network call, and every call that reads the
//     work tree (where a named pipe can hold git up), has Config.GitTimeout.
//   - Nothing the agent writes is executed or trusted by the bot's git; see
//     below.
//   - Operations on one thread are serialised; different threads and
//     repositories run in parallel. Close waits for background work.
//   - Errors are *Error values whose Message can be shown in the thread as
//     is; see ErrorMessage.
//
// Which tool does what, and why: the git CLI creates mirrors and worktrees
// (go-git has no `worktree add`), fetches and pushes (one transport, one
// credential helper, one ssh command, ssh's own config such as ProxyCommand
// honoured), stages (ls-files and update-index, what `git add -A` does),
// answers "anything changed?" (`git status`) and produces the diffs and the
// per-file line counts of a push, where go-git is slow on large trees or has
// no API; go-git makes the commits.
//
// # The agent is untrusted
//
// Its bash can write anything in Root (the .git file, .gitattributes,
// .gitmodules, nested repositories, symlinks) and, without a sandbox, the
// mirror as well (`git config` in a worktree writes the mirror's config).
// None of it is executed or trusted by the bot's own git:
//
//   - Every git call names its repository: GIT_DIR is the worktree's admin
//     dir, GIT_COMMON_DIR the thread's repository, GIT_WORK_TREE Root. The admin dir is
//     found from the mirror's side (the registration whose gitdir file names
//     Root/.git); Root/.git and the admin dir's commondir file are never
//     read. go-git opens the same two folders as explicit storage. Open
//     rewrites a wrong Root/.git for the agent's own git; a Root whose
//     registration vanished is registered again around its files, so
//     uncommitted work survives. Registrations are locked and pruned by the
//     bot only, judging by whether Root exists, not Root/.git.
//   - The mirror's config file belongs to the bot. Its content (what
//     `git init --bare` writes on this machine, plus the remote) is worked
//     out once per process, and before every git call, CLI or go-git, a
//     changed file is replaced and a warning logged. The whole file rather
//     than a list of keys: git's config names commands and destinations
//     under names its writer picks (filter.<x>.clean, merge.<x>.driver,
//     diff.<x>.textconv, url.<x>.insteadOf, remote.<url>.*, include and
//     includeIf), so no list of overrides is complete, while the drivers
//     .gitattributes in Root asks for do nothing without a config to name
//     them. The config lives in the mirror rather than in a file of the
//     bot's because git reads a repository's config only from there.
//   - Every call also pins, through GIT_CONFIG_COUNT (it outranks every
//     file and reaches the git processes git starts) and the environment,
//     each fixed-name key that runs a command or sends credentials:
//     core.fsmonitor, core.hooksPath, pagers and editors, core.sshCommand,
//     core.askPass, core.alternateRefsCommand, core.gitProxy,
//     credential.helper, gpg programs and signing, submodule recursion and
//     more (neutralConfig). They hold even if a writer racing the bot
//     changes the file between the check and git reading it, which only an
//     unsandboxed agent can do.
//   - Diffs pass --no-ext-diff and --no-textconv. Git never runs inside a
//     nested repository: status passes --ignore-submodules=dirty (the flag
//     outranks .gitmodules) and staging uses ls-files and update-index,
//     because `git add -A` runs `git status` in every submodule, with that
//     repository's own config.
//   - The remote is the configured URL on every call: fetch, ls-remote and
//     push name it on the command line. remote.origin.* in the mirror's
//     config is written for the agent's benefit only. GIT_ALLOW_PROTOCOL allows the remote's
//     transport on network calls and none on the others, and the token's
//     credential helper answers only for the configured host.
//   - Only the bot pushes, only the thread's branch under branch_prefix
//     (never the default branch), with an explicit refspec for that branch
//     alone, and a force push only as a lease on a remote tip whose dropped
//     commits are all the bot's. Everyone else's CLI push fails: the
//     mirror's pushurl is a dead end and its pre-push hook refuses it; the
//     bot's push names the URL and runs no hook (--no-verify, and hooks are
//     pinned off for every call).
//
// A sandbox gives the agent's own git what it needs read-only
// (ReadOnlyGitPaths): the thread's repository and the mirror's object store;
// `git status`, `diff` and `log` work in Root with both read-only, and
// nothing of other threads is in either. Without a sandbox the agent can
// still write the mirror's refs and objects and other threads' repositories,
// which no git setting prevents.
package workspace
