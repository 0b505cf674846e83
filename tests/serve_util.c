#include "tests/serve_util.h"

#include <criterion/criterion.h>
#include <stdio.h>

#include "tests/http_client.h"
#include "tests/testutil.h"

void serve_start(server *s, const char *dir, const char *const *extra)
{
    char model[1024];
    snprintf(model, sizeof model, "%s%s%s", dir[0] == '/' ? "" : test_srcdir(),
             dir[0] == '/' ? "" : "/", dir);
    const char *argv[40] = {test_tessera_path(), "serve", "-m", model, "--port", "0"};
    int argc = 6;
    for (size_t i = 0; extra && extra[i] && argc < 39; i++)
        argv[argc++] = extra[i];
    argv[argc] = NULL;
    s->pid = http_start_server((char *const *)argv, 60, &s->port, &s->out, s->log, sizeof s->log);
    cr_assert_gt(s->pid, 0, "tessera serve did not start: %s", s->log);
    cr_assert_eq(http_wait_output(s->out, "ready", 120, s->log, sizeof s->log), 0,
                 "tessera serve never said it was ready: %s", s->log);
}
