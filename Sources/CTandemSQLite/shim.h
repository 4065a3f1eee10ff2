#ifndef TANDEM_SQLITE_SHIM_H
#define TANDEM_SQLITE_SHIM_H

/* Debian's libsqlite3 (libsqlite3-dev), for what a relay keeps across a restart (TandemRelayState). */
#include <sqlite3.h>

#endif
