// Package tools holds the coding tools of a session — read, write, edit, bash,
// grep, find and ls — confined to the session's Workspace.
//
// Contract:
//
//   - Confinement. Every path a model gives goes through one resolver
//     (Workspace.resolve): relative to the workspace root; absolute only inside
//     the root or the scratch folder; no "..", symlink (last or intermediate)
//     or symlink loop leading out; no NUL bytes, overlong paths, "~" or unicode
//     look-alikes of ".", ".." and "/"; nothing inside .git, for reading or
//     writing. Operations then go through os.Root, so a symlink swapped in
//     after the check cannot lead out either. grep, find and ls never follow
//     symbolic links. bash is not path-confined (it is a shell): it runs in the
//     Workspace's sandbox (package sandbox: only the root, the scratch area's
//     home and tmp are writable, the rest of the scratch area and the
//     configured Mounts read-only, nothing else of the machine visible) with
//     an allowlisted environment and a timeout, and everything it started is
//     killed when it ends.
//   - Errors. A model's mistake (bad path, no match, failing command) is a
//     result with IsError set and a message the model can act on. A non-nil
//     error means broken infrastructure (no pipe, no bash, a full disk while
//     saving output) and carries no secret.
//   - Limits. Results keep to 2000 lines or 50 KB (package truncate, pi's
//     rules): read cuts the head and says which offset continues, bash keeps
//     the tail and saves the full output in the scratch folder. Decorators cap
//     any result again and redact configured secrets.
//   - Read before edit. The tools of one New call share a ReadTracker; edit
//     refuses files this session has not read or that changed since.
//   - Concurrency. Tools are safe for concurrent use; read, grep, find and ls
//     report ReadOnly so the agent loop may run them in parallel. Every tool
//     returns promptly once its context is done.
package tools
