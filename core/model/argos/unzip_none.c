/* core/model/argos/unzip.h in a build without libzip: an .argosmodel is
 * refused, naming what to do instead. */
#include "core/model/argos/unzip.h"

#include "base/errors.h"

int tsr_unzip_available(void) { return 0; }

int tsr_unzip_package(const char *zip_path, const char *dir, size_t max_bytes, char *err,
                      size_t err_len)
{
    (void)zip_path;
    (void)dir;
    (void)max_bytes;
    return tsr_fail(err, err_len,
                    "an .argosmodel (zip) package, but this tessera was built without libzip "
                    "(libzip-dev): unzip it and give its folder");
}
