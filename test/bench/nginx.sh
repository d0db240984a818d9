# test/bench/nginx.sh: the loopback nginx the benchmarks run against.
#
# Sourced after test/lib.sh, once QC_WORK exists.  qc_start_nginx starts
# Debian's nginx on a free loopback port, writing only under QC_WORK, and
# sets QC_NGINX_BASE to its URL.  It serves:
#   /small.json   a small JSON document
#   /page.html    a 60 KB HTML page (100 paragraphs)
#   /delay        "done" after 20 ms, through the echo module
# Its pid file is QC_WORK/nginx.pid, so qc_cleanup stops it.

QC_PACKAGES="$QC_PACKAGES nginx-light libnginx-mod-http-echo"

qc_start_nginx() {
	local web="$QC_WORK/nginx" port
	mkdir -p "$web/html" "$web/tmp"
	port=$("$QC_PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	printf '{"ok": true, "n": 42}' >"$web/html/small.json"
	"$QC_PYTHON" - "$web/html/page.html" <<'PY'
import sys
paras = "".join(f"<p>Paragraph {i}: " + "lorem ipsum dolor sit amet " * 20 + "</p>\n" for i in range(100))
page = f"<!DOCTYPE html><html><head><title>Bench page</title><style>p {{margin:0}}</style></head><body><nav><a href='/'>Home</a></nav><main><h1>Bench</h1>{paras}</main></body></html>"
open(sys.argv[1], "w").write(page[:61440] if len(page) > 61440 else page)
PY
	cat >"$web/nginx.conf" <<CONF
load_module /usr/lib/nginx/modules/ngx_http_echo_module.so;
worker_processes 1;
pid $QC_WORK/nginx.pid;
error_log $web/error.log;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $web/tmp; proxy_temp_path $web/tmp; fastcgi_temp_path $web/tmp;
    uwsgi_temp_path $web/tmp; scgi_temp_path $web/tmp;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$port;
        root $web/html;
        location = /small.json { default_type application/json; }
        location = /delay { default_type text/plain; echo_sleep 0.02; echo "done"; }
    }
}
CONF
	nginx -c "$web/nginx.conf" -e "$web/error.log" || { cat "$web/error.log"; return 1; }
	QC_NGINX_BASE="http://127.0.0.1:$port"
}
