#pragma once
// A gate run's receipt: an HMAC-SHA256, keyed with a per-machine secret kept outside the
// repository, over the fields of its lineage record that `attngate commit` relies on. A record
// written by `attngate record` or edited by hand has no valid receipt, so commit refuses it.
// It proves the record came from attngate on this machine to anyone who cannot read the key file;
// it does not stop a process that can read the key (the agent runs as the same user).
#include <filesystem>
#include <string>

#include "attngate/hooks/git_commits.hpp"
#include "attngate/hooks/lineage.hpp"

namespace attngate::hooks {

// $ATTNGATE_STATE_HOME/key, else $XDG_STATE_HOME/attngate/key, else ~/.local/state/attngate/key.
std::filesystem::path receipt_key_file();

// The key's 32 bytes. With `create`, a missing key is made (0600, from /dev/urandom; two runs
// creating it at once agree on one). Throws when it cannot be read or created, is not 32 bytes, or
// lies inside `repo` (where the agent's own commits could carry it).
std::string load_receipt_key(const std::filesystem::path& file, const std::filesystem::path& repo, bool create);

// /etc/machine-id, else the host name.
std::string machine_id();

// The signed text: one "name=value" line per field commit relies on.
std::string receipt_message(const Record& r);
std::string receipt_hmac(const Record& r, const std::string& key);
bool receipt_valid(const Record& r, const std::string& key);

// A commit's receipt (its Attngate-Receipt trailer): the HMAC, with the same key, over the other
// Attngate trailers of the commit exactly as written (git_commits.hpp CommitTrailers). It lets
// this machine believe a commit's geomean when a new lineage has no record of it (the step
// signal's bar, supervisor.hpp StepBar): a hand-made commit, or one made on another machine, does
// not verify.
std::string commit_receipt_message(const CommitTrailers& t);
std::string commit_receipt_hmac(const CommitTrailers& t, const std::string& key);
bool commit_receipt_valid(const CommitTrailers& t, const std::string& hmac, const std::string& key);

}  // namespace attngate::hooks
