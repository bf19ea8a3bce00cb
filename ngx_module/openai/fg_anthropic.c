
/*
 * fairgate: the gateway's errors in the shape of Anthropic's Messages API,
 * for the requests that call it in drop-in mode (401, 429, 503 ... answered
 * by the gateway, not by the upstream): Anthropic's SDKs read the error's
 * type from error.type and raise RateLimitError, AuthenticationError and
 * the others from it and the status.
 */

#include "fg_anthropic.h"
#include "fg_openai_write_int.h"


const char *
fg_anthropic_error_type(unsigned status)
{
    switch (status) {

    case 400:
    case 405:
    case 414:
    case 431:
        return "invalid_request_error";

    case 401:
        return "authentication_error";

    case 402:
        return "billing_error";

    case 403:
        return "permission_error";

    case 404:
        return "not_found_error";

    case 413:
        return "request_too_large";

    case 429:
        return "rate_limit_error";

    case 503:
    case 529:
        return "overloaded_error";

    case 504:
        return "timeout_error";

    default:
        return (status >= 400 && status < 500) ? "invalid_request_error"
                                               : "api_error";
    }
}


size_t
fg_anthropic_error_body(unsigned status, const char *message, char *out,
    size_t size)
{
    fg_oai_w_t  w;

    fg_oai_w_init(&w, out, size);

    fg_oai_put_str(&w, "{\"type\":\"error\",\"error\":{\"type\":\"");
    fg_oai_put_str(&w, fg_anthropic_error_type(status));
    fg_oai_put_str(&w, "\",\"message\":");
    fg_oai_put_json_or_null(&w, message);
    fg_oai_put_str(&w, "}}\n");

    return w.n;
}
