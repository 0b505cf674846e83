#include "tests/serve_util.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/tessera.h"
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

void serve_stop(server *s)
{
    cr_assert_eq(kill(s->pid, SIGTERM), 0);
    int status;
    cr_assert_eq(waitpid(s->pid, &status, 0), s->pid);
    http_wait_output(s->out, "stopped", 5, s->log, sizeof s->log);
    close(s->out);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "tessera serve did not exit 0 on SIGTERM: %s", s->log);
    cr_expect(strstr(s->log, "stopped"), "no 'stopped' line: %s", s->log);
}

http_reply serve_call(const server *s, const char *method, const char *path, const char *body)
{
    http_reply r;
    http_request(s->port, method, path, body, body ? strlen(body) : 0, &r);
    return r;
}

const char *serve_error_message(json_t *root)
{
    json_t *e = json_object_get(root, "error");
    return json_string_value(json_object_get(e, "message"));
}

int serve_reads_text(const char *dir)
{
    tessera_model *m;
    char err[512], path[4096];
    snprintf(path, sizeof path, "%s/%s", test_srcdir(), dir);
    cr_assert_eq(tessera_model_load(path, &m, err, sizeof err), 0, "%s", err);
    int has_text = tessera_model_has_tokenizer(m, TESSERA_SOURCE);
    tessera_model_free(m);
    return has_text;
}
