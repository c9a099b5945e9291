#include "mojoup/internal/foreground.h"

#include <signal.h>

#include "mojoup/service/client.h"

namespace mojoup {

void BlockForegroundSignals() { internal::BlockForegroundSignals(); }

absl::StatusOr<int> AttachInForeground(Attachment& attachment, const ForegroundAttach& how) {
  internal::ForegroundCommand command;
  command.terminal = how.terminal;
  // A session is sandboxed: a second interrupt takes its sandbox away.
  command.kill_on_second_interrupt = true;
  command.wait = [&attachment, &how](unsigned short rows, unsigned short columns) {
    sandbox::Stdio stdio;
    stdio.rows = rows;
    stdio.columns = columns;
    return attachment.Pump(stdio, how.hooks);
  };
  command.signal = [&attachment, &how](int signal) {
    if (how.detach_on_end && (signal == SIGTERM || signal == SIGHUP)) {
      attachment.Detach();
      return;
    }
    attachment.Signal(signal).IgnoreError();
  };
  command.resize = [&attachment](unsigned short rows, unsigned short columns) {
    attachment.Resize(rows, columns).IgnoreError();
  };
  return internal::RunInForeground(command);
}

}  // namespace mojoup
