// SPDX-License-Identifier: GPL-2.0-or-later
// Telling one receiver each change of a yes/no state, in order, one thread
// at a time, when the telling may change the state again on the same
// thread: the dispatcher's queue observer (any VM waiting) and the host's
// SLICE_YIELD write (the write delivers GPU events whose handlers call in).
#pragma once

#include <atomic>

namespace vgpu {

class ChangeTeller {
 public:
  // The state may have changed: the one thread telling (this one, when
  // none is) looks at `now()` until nothing changed since it looked, and
  // calls `tell(state)` for each state that differs from the last told. A
  // call that finds another thread telling, or itself further up its stack,
  // leaves the change to it.
  template <typename Now, typename Tell>
  void changed(Now&& now, Tell&& tell) {
    changed_.store(true);
    while (changed_.load()) {
      if (telling_.exchange(true)) return;
      struct Release {  // also when tell throws
        std::atomic<bool>& telling;
        ~Release() { telling.store(false); }
      } release{telling_};
      while (changed_.exchange(false)) {
        const bool state = now();
        if (state == told_) continue;
        told_ = state;
        tell(state);
      }
    }
  }

 private:
  std::atomic<bool> changed_{false};  // changed() has something to look at
  std::atomic<bool> telling_{false};  // a thread is in changed()'s loop
  bool told_ = false;                 // what was last told (telling_'s holder's)
};

}  // namespace vgpu
