// Package workspace gives every chat thread its own checkout of a configured
// git repository, commits the agent's work there as the bot, pushes it to
// the thread's review branch and diffs it against the default branch.
//
// Layout under Config.DataDir:
//
//	mirrors/<repo>.git          one bare mirror per repository, remote
//	                            branches fetched into refs/remotes/origin/*
//	workspaces/<repo>/<id>      one linked worktree per thread (Root)
//	scratch/<repo>/<id>         downloads and tool output (ScratchDir)
//	meta/<repo>/<id>.json       thread key, branch and last use
//
// where <id> is the branch name without Config.BranchPrefix. A worktree off a
// shared mirror is ready in about the time of `git worktree add`, a fraction
// of a clone, and costs only its checked-out files.
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
//     has no credentials, the git CLI gets the token through an
//     environment-provided credential helper, go-git through its auth API.
//   - Every git process is hermetic (no global/system config, no prompts,
//     no hooks, the bot's identity, only a short allow-list of the bot's
//     environment) and every network call has Config.GitTimeout.
//   - Operations on one thread are serialised; different threads and
//     repositories run in parallel. Close waits for background work.
//   - Errors are *Error values whose Message can be shown in the thread as
//     is; see ErrorMessage.
//
// Which tool does what, and why: the git CLI creates mirrors and worktrees
// (go-git has no `worktree add`), fetches, stages (`git add -A`), answers
// "anything changed?" (`git status`) and produces the working-tree diff,
// where go-git is slow on large trees or has no API; go-git makes the
// commits, pushes with token or ssh-key auth, and computes the per-file
// line counts of a push.
package workspace
