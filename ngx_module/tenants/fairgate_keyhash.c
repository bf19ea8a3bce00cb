
/*
 * fairgate-keyhash: the line of a fairgate_keys file for an API key.
 *
 *     fairgate-keyhash USER APP WEIGHT [rpm=N] [tpm=N] [quota=Q]
 *                      [budget=B] < KEY
 *     fairgate-keyhash -n USER APP WEIGHT [rpm=N] ...
 *
 * The first reads the key from the first line of its input; the second
 * makes a new random key and prints it on stderr, once: the file keeps only
 * its SHA-256.  The line goes to stdout.  APP "-" means none.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rand.h>


static int
usage(void)
{
    fprintf(stderr,
            "usage: fairgate-keyhash [-n] USER APP WEIGHT [rpm=N] [tpm=N] "
            "[quota=Q] [budget=B]\n"
            "  reads the key from stdin, or with -n makes one and prints "
            "it on stderr;\n  prints the fairgate_keys line on stdout\n");
    return 2;
}


static int
valid_name(const char *s)
{
    size_t  n;

    n = strlen(s);

    if (n == 0 || n > 255) {
        return 0;
    }

    for ( /* void */ ; *s; s++) {
        if ((unsigned char) *s < 0x21 || *s == 0x7f || *s == '"'
            || *s == '\\' || *s == '#')
        {
            return 0;
        }
    }

    return 1;
}


static int
valid_limit(const char *s)
{
    char  *end;
    long   v;

    /* quota= and budget= are read by nginx -t, which names what is wrong */

    if (strncmp(s, "quota=", 6) == 0 || strncmp(s, "budget=", 7) == 0) {
        return strchr(s, '=')[1] != '\0' && strpbrk(s, " \t\"\\#") == NULL;
    }

    if (strncmp(s, "rpm=", 4) != 0 && strncmp(s, "tpm=", 4) != 0) {
        return 0;
    }

    v = strtol(s + 4, &end, 10);

    return *end == '\0' && end != s + 4 && v > 0;
}


int
main(int argc, char **argv)
{
    int             i, make;
    char            key[4096], *end;
    double          weight;
    size_t          len;
    unsigned int    n;
    unsigned char   md[EVP_MAX_MD_SIZE], raw[24];

    make = (argc > 1 && strcmp(argv[1], "-n") == 0);
    argv += make;
    argc -= make;

    if (argc < 4 || argc > 8) {
        return usage();
    }

    if (!valid_name(argv[1]) || !valid_name(argv[2])) {
        fprintf(stderr, "fairgate-keyhash: a user or app is 1 to 255 "
                "printable characters, no quotes, '\\' or '#'\n");
        return 2;
    }

    weight = strtod(argv[3], &end);

    if (*end != '\0' || end == argv[3] || !(weight > 0 && weight <= 1e6)) {
        fprintf(stderr, "fairgate-keyhash: invalid weight \"%s\"\n", argv[3]);
        return 2;
    }

    for (i = 4; i < argc; i++) {
        if (!valid_limit(argv[i])) {
            fprintf(stderr, "fairgate-keyhash: invalid limit \"%s\"\n",
                    argv[i]);
            return 2;
        }
    }

    if (make) {
        if (RAND_bytes(raw, sizeof(raw)) != 1) {
            fprintf(stderr, "fairgate-keyhash: no random bytes\n");
            return 1;
        }

        len = (size_t) sprintf(key, "fg-");

        for (i = 0; i < (int) sizeof(raw); i++) {
            len += (size_t) sprintf(key + len, "%02x", raw[i]);
        }

        fprintf(stderr, "%s\n", key);

    } else {
        if (fgets(key, sizeof(key), stdin) == NULL) {
            fprintf(stderr, "fairgate-keyhash: no key on stdin\n");
            return 2;
        }

        len = strcspn(key, "\r\n");
        key[len] = '\0';

        if (len == 0) {
            fprintf(stderr, "fairgate-keyhash: empty key\n");
            return 2;
        }
    }

    if (EVP_Digest(key, len, md, &n, EVP_sha256(), NULL) != 1) {
        fprintf(stderr, "fairgate-keyhash: SHA-256 failed\n");
        return 1;
    }

    for (i = 0; i < (int) n; i++) {
        printf("%02x", md[i]);
    }

    printf(" %s %s %s", argv[1], argv[2], argv[3]);

    for (i = 4; i < argc; i++) {
        printf(" %s", argv[i]);
    }

    printf("\n");

    return 0;
}
