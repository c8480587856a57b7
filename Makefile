# `make run` serves Newsroom; `make test` runs the suite. Both install what they need.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum requirements.txt | cut -d' ' -f1)

.PHONY: run test browser

$(STAMP): requirements.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@rm -f $(VENV)/.installed-*
	@touch $@

run: $(STAMP)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py serve

# Browser tests need Chromium: Debian's package when we may install it.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      echo "Installing Debian's chromium for the browser tests"; \
	      (apt-get install -y -qq chromium >/dev/null 2>&1 || \
	       (apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null)) || \
	      echo "Could not install chromium; browser tests will be skipped"; \
	    else echo "chromium is not installed; browser tests will be skipped"; fi; }

test: $(STAMP) browser
	$(PY) -m pytest
