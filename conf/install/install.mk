# conf/install/: make install and make uninstall, the Debian way.
#
# The module goes where Debian's nginx looks for modules, with the load
# file of Debian's libnginx-mod-* packages in modules-available and its
# link in modules-enabled, so that nginx loads it at its next start or
# reload.  The engine and the tools go under PREFIX (the engine in
# lib/fairgate/, beside the cuda backend when it is built, and linked
# from bin/); the systemd template unit fairgate-engine@.service, one
# engine per model or GPU, reads SYSCONFDIR/fairgate/engine-NAME.conf;
# the examples (an engine's file, an nginx site) go to share/fairgate/.
# DESTDIR stages it all in another tree (a package's, t/097-install.t's).
#
#     make install [PREFIX=/usr/local] [DESTDIR=] [SYSCONFDIR=/etc]
#     make uninstall (the same variables; SYSCONFDIR/fairgate is kept)

PREFIX          ?= /usr/local
SYSCONFDIR      ?= /etc
UNITDIR         ?= $(PREFIX)/lib/systemd/system
NGX_MODULES_DIR ?= /usr/lib/nginx/modules
NGX_AVAILABLE   ?= /usr/share/nginx/modules-available
NGX_ENABLED     ?= $(SYSCONFDIR)/nginx/modules-enabled

FG_BINDIR  = $(PREFIX)/bin
FG_LIBDIR  = $(PREFIX)/lib/fairgate
FG_DATADIR = $(PREFIX)/share/fairgate

FG_LOAD_CONF = mod-http-fairgate.conf
FG_LOAD_LINK = 50-$(FG_LOAD_CONF)

# the cuda backend, where nvcc built it
FG_INSTALL_CUDA = $(filter $(FG_CUDA_SO),$(FG_TOOLS))

FG_INSTALL_FROM = $(BUILD)/ngx_http_fairgate_module.so \
                  $(BUILD)/fairgate-engine $(BUILD)/fairgate-keyhash \
                  $(BUILD)/fairgate-gguf-gen $(FG_INSTALL_CUDA)

# the paths the installed files name
FG_INSTALL_SED = sed -e 's|@BINDIR@|$(FG_BINDIR)|g' \
                     -e 's|@DATADIR@|$(FG_DATADIR)|g' \
                     -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g'

# $(call fg_install,MODE,FILE,DIR): a new file renamed into place, as the
# build does: a running nginx maps the module, and an engine runs from
# its file; rewriting either in place would crash it
fg_install = install -m $(1) $(2) $(3)/$(notdir $(2)).new \
             && mv -f $(3)/$(notdir $(2)).new $(3)/$(notdir $(2))

# where each goes, DESTDIR put in front
FG_I_MOD   = $(DESTDIR)$(NGX_MODULES_DIR)
FG_I_AVAIL = $(DESTDIR)$(NGX_AVAILABLE)
FG_I_ENAB  = $(DESTDIR)$(NGX_ENABLED)
FG_I_BIN   = $(DESTDIR)$(FG_BINDIR)
FG_I_LIB   = $(DESTDIR)$(FG_LIBDIR)
FG_I_DATA  = $(DESTDIR)$(FG_DATADIR)
FG_I_UNIT  = $(DESTDIR)$(UNITDIR)/fairgate-engine@.service

.PHONY: install uninstall

install: $(FG_INSTALL_FROM)
	install -d $(FG_I_MOD) $(FG_I_AVAIL) $(FG_I_ENAB) $(FG_I_BIN) \
	    $(FG_I_LIB) $(FG_I_DATA) $(dir $(FG_I_UNIT)) \
	    $(DESTDIR)$(SYSCONFDIR)/fairgate
	$(call fg_install,644,$(BUILD)/ngx_http_fairgate_module.so,$(FG_I_MOD))
	$(call fg_install,644,conf/install/$(FG_LOAD_CONF),$(FG_I_AVAIL))
	ln -sfn $(NGX_AVAILABLE)/$(FG_LOAD_CONF) $(FG_I_ENAB)/$(FG_LOAD_LINK)
	$(call fg_install,755,$(BUILD)/fairgate-engine,$(FG_I_LIB))
	$(if $(FG_INSTALL_CUDA),$(call fg_install,644,$(FG_INSTALL_CUDA),$(FG_I_LIB)))
	ln -sfn ../lib/fairgate/fairgate-engine $(FG_I_BIN)/fairgate-engine
	$(call fg_install,755,$(BUILD)/fairgate-keyhash,$(FG_I_BIN))
	$(call fg_install,755,$(BUILD)/fairgate-gguf-gen,$(FG_I_BIN))
	$(FG_INSTALL_SED) 'conf/install/fairgate-engine@.service' \
	    > '$(FG_I_UNIT)'
	$(FG_INSTALL_SED) conf/install/engine.conf > $(FG_I_DATA)/engine.conf
	$(FG_INSTALL_SED) conf/install/nginx-site.conf \
	    > $(FG_I_DATA)/nginx-site.conf
	@echo "installed.  Then: systemctl daemon-reload; an engine's" \
	    "$(SYSCONFDIR)/fairgate/engine-NAME.conf; nginx -t &&" \
	    "systemctl reload nginx (docs/operations.md)"

uninstall:
	rm -f $(FG_I_ENAB)/$(FG_LOAD_LINK) $(FG_I_AVAIL)/$(FG_LOAD_CONF) \
	    $(FG_I_MOD)/ngx_http_fairgate_module.so \
	    $(addprefix $(FG_I_BIN)/,fairgate-engine fairgate-keyhash \
	                              fairgate-gguf-gen) \
	    $(FG_I_LIB)/fairgate-engine $(FG_I_LIB)/fairgate-backend-cuda.so \
	    '$(FG_I_UNIT)' $(FG_I_DATA)/engine.conf $(FG_I_DATA)/nginx-site.conf
	rmdir --ignore-fail-on-non-empty $(FG_I_LIB) $(FG_I_DATA)
