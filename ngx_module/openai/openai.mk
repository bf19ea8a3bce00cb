# ngx_module/openai/: the OpenAI API layer, pure C with no nginx type:
# the drop-in gateway's JSON scanner (fg_json.c), requests parsed and
# checked (fg_openai_request.c and the checks beside it), chat templates
# (the families' formats, and the model's own through ngx_module/jinja/),
# every OpenAI body written (fg_openai_response.c), Anthropic's error body
# for /v1/messages (fg_anthropic.c), the stop matcher, the keys file's
# lines (fg_keys.c) and its keys found by SHA-256 (fg_keys_table.c);
# libfgopenai.a.  The nginx module compiles the same list; the tests link
# the library.

FG_OPENAI_SRCS := ngx_module/openai/fg_json.c \
                  ngx_module/openai/fg_openai_request.c \
                  ngx_module/openai/fg_openai_check.c \
                  ngx_module/openai/fg_openai_params.c \
                  ngx_module/openai/fg_openai_messages.c \
                  ngx_module/openai/fg_openai_prompt.c \
                  ngx_module/openai/fg_openai_embed.c \
                  ngx_module/openai/fg_openai_sampling.c \
                  ngx_module/openai/fg_openai_unsupported.c \
                  ngx_module/openai/fg_openai_format.c \
                  ngx_module/openai/fg_openai_responses.c \
                  ngx_module/openai/fg_openai_input.c \
                  ngx_module/openai/fg_openai_resp_tools.c \
                  ngx_module/openai/fg_openai_write.c \
                  ngx_module/openai/fg_openai_tools.c \
                  ngx_module/openai/fg_tool_parse.c \
                  ngx_module/openai/fg_tool_stream.c \
                  ngx_module/openai/fg_openai_tool_resp.c \
                  ngx_module/openai/fg_chat_tools.c \
                  ngx_module/openai/fg_openai_response.c \
                  ngx_module/openai/fg_openai_embed_resp.c \
                  ngx_module/openai/fg_openai_responses_out.c \
                  ngx_module/openai/fg_openai_resp_calls.c \
                  ngx_module/openai/fg_openai_stop.c \
                  ngx_module/openai/fg_usage.c \
                  ngx_module/openai/fg_anthropic.c \
                  ngx_module/openai/fg_keys.c \
                  ngx_module/openai/fg_keys_table.c \
                  ngx_module/openai/fg_chat_template.c \
                  ngx_module/openai/fg_chat_jinja.c
FG_OPENAI_INC  := -Ingx_module/openai $(FG_MODEL_INC) $(FG_JINJA_INC) \
                  $(FG_GRAMMAR_INC)

$(BUILD)/obj/ngx_module/openai/%.o: FG_INC := $(FG_OPENAI_INC)

$(eval $(call fg_lib,openai,$(FG_OPENAI_SRCS)))
