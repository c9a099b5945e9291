#include "mojoup/sandbox/foreground.h"

#include "mojoup/internal/foreground.h"

namespace mojoup::sandbox {

void BlockForegroundSignals() { internal::BlockForegroundSignals(); }

absl::StatusOr<int> RunInForeground(RunningCommand& run) {
  internal::ForegroundCommand command;
  command.terminal = run.terminal();
  // A second interrupt takes a sandbox away; an unsandboxed command gets it.
  command.kill_on_second_interrupt = !run.record().id.empty();
  command.wait = [&run](unsigned short rows, unsigned short columns) {
    Stdio stdio;
    stdio.rows = rows;
    stdio.columns = columns;
    return run.Wait(stdio);
  };
  command.signal = [&run](int signal) { run.Signal(signal).IgnoreError(); };
  command.resize = [&run](unsigned short rows, unsigned short columns) {
    run.Resize(rows, columns).IgnoreError();
  };
  return internal::RunInForeground(command);
}

}  // namespace mojoup::sandbox
