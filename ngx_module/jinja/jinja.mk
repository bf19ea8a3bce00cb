# ngx_module/jinja/: chat templates' Jinja, pure C with no nginx type:
# a template parsed once (fg_jinja_lex.c, _tok.c, _parse.c, _expr.c) and
# rendered (fg_jinja_exec.c, _eval.c, _filter.c, _method.c, _sort.c,
# _str.c, _buf.c, values in _value.c) as the reference
# (@huggingface/jinja) renders it, into segments that say which bytes
# came from the request; libfgjinja.a.  The nginx module compiles the
# same list; the tests link the library.

FG_JINJA_SRCS := ngx_module/jinja/fg_jinja_value.c \
                 ngx_module/jinja/fg_jinja_buf.c \
                 ngx_module/jinja/fg_jinja_str.c \
                 ngx_module/jinja/fg_jinja_sort.c \
                 ngx_module/jinja/fg_jinja_lex.c \
                 ngx_module/jinja/fg_jinja_tok.c \
                 ngx_module/jinja/fg_jinja_parse.c \
                 ngx_module/jinja/fg_jinja_expr.c \
                 ngx_module/jinja/fg_jinja_eval.c \
                 ngx_module/jinja/fg_jinja_exec.c \
                 ngx_module/jinja/fg_jinja_filter.c \
                 ngx_module/jinja/fg_jinja_method.c
FG_JINJA_INC  := -Ingx_module/jinja

$(BUILD)/obj/ngx_module/jinja/%.o: FG_INC := $(FG_JINJA_INC)

$(eval $(call fg_lib,jinja,$(FG_JINJA_SRCS)))
