#!/usr/bin/env perl

# Models per key and model aliases in drop-in mode: a key limited to some
# models gets OpenAI's 404 model_not_found for another, before the
# upstream; an alias's target is what the upstream reads in the body (its
# Content-Length too) and what $fairgate_model routes by, while
# $fairgate_model_requested keeps the public name; nginx -t refuses a bad
# models list (file and line) and a bad alias.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;

use Fairgate::Test qw(wait_for);
use Fairgate::MockUpstream;
use Fairgate::Engine qw(wait_attached);


my $json = JSON::PP->new->canonical;
my $mock = Fairgate::MockUpstream->new;

# an upstream that logs the body it is sent, then hands it to the mock
my $seen = Fairgate::Test::Server->new(
    module => 0,
    http_config => "    log_format body escape=none '\$request_body|\$content_length';\n",
    config => <<"END");
    location / {
        access_log logs/body.log body;
        proxy_pass http://${\ $mock->addr };
    }
END
$seen->start or die $seen->last_error;

my $keys = Fairgate::Test::keys_file(
    ['sk-any', 'anyone', '-', 1],
    ['sk-lim', 'limited', '-', 1, 'models=gpt-4o,llama3,public-small'],
);

my $s = Fairgate::Test::Server->new(
    http_config => <<"END",
    fairgate_zone zone=llm:16m inflight=8;
    fairgate_model_alias public-small target-a;
    fairgate_model_alias llama3 meta/llama-3-8b;
    map \$fairgate_model \$fg_backend {
        target-a         127.0.0.1:${\ $seen->port };
        default          ${\ $mock->addr };
    }
END
    config => <<"END");
    location /v1/ {
        fairgate zone=llm queue=10 timeout=10s;
        fairgate_keys $keys;
        add_header X-Model \$fairgate_model always;
        add_header X-Model-Requested \$fairgate_model_requested always;
        proxy_pass http://\$fg_backend;
    }
END
$s->start or die $s->last_error;


sub chat {
    my ($key, $model) = @_;
    my $body = $json->encode({ (defined $model ? (model => $model) : ()),
                               max_tokens => 4,
                               messages => [{ role => 'user',
                                              content => 'hi' }] });
    return $s->post('/v1/chat/completions', $body,
                    headers => ["Authorization: Bearer $key",
                                'Content-Type: application/json']);
}


sub error_of { (eval { $json->decode($_[0]{body}) } // {})->{error} // {} }


subtest 'a key with no list may use any model' => sub {
    is(chat('sk-any', 'whatever')->{status}, 200, 'any model: 200');
};

subtest 'a key limited to models: its models pass, others get 404' => sub {
    my $before = () = $mock->served;

    is(chat('sk-lim', 'gpt-4o')->{status}, 200, 'gpt-4o, in its list: 200');

    my $r = chat('sk-lim', 'gpt-4');
    is($r->{status}, 404, 'gpt-4, not in its list: 404');
    is_deeply(error_of($r),
              { message => 'The model `gpt-4` does not exist or you do not '
                           . 'have access to it.',
                type => 'invalid_request_error', param => undef,
                code => 'model_not_found' },
              "OpenAI's model_not_found error")
        or diag($r->{body});

    # a prefix of a listed name is not the name
    is(chat('sk-lim', 'gpt-4o-mini')->{status}, 404, 'gpt-4o-mini: 404');
    is(chat('sk-lim', 'gpt')->{status}, 404, 'gpt: 404');

    my $no = chat('sk-lim', undef);
    is($no->{status}, 400, 'no model at all: 400');
    is(error_of($no)->{param}, 'model', 'naming the model parameter');

    my $after = () = $mock->served;
    is($after - $before, 1, 'only the allowed request reached the upstream');
};

subtest 'an alias: the upstream reads the target, routing sees it' => sub {
    my $r = chat('sk-lim', 'public-small');
    is($r->{status}, 200, 'public-small, listed by its public name: 200');
    is($r->{headers}{'x-model'}, 'target-a', '$fairgate_model: the target');
    is($r->{headers}{'x-model-requested'}, 'public-small',
       '$fairgate_model_requested: the public name');

    my $line = '';
    ok(wait_for(5, sub {
        open my $fh, '<', $seen->prefix . '/logs/body.log' or return 0;
        ($line) = grep { /target-a/ } <$fh>;
        return defined $line;
    }), 'the target-a upstream got the request (map $fairgate_model)');

    my ($body, $length) = ($line // '') =~ /^(.*)\|(\d+)$/;
    my $req = eval { $json->decode($body // '') } // {};
    is($req->{model}, 'target-a', 'the body it got names the target');
    is($req->{messages}[0]{content}, 'hi', 'the rest of the body as sent');
    is($length, length($body // ''), 'its Content-Length is the new one');
    unlike($body // '', qr/public-small/, 'no trace of the public name');
};

subtest 'an alias to another upstream name goes to the default route' => sub {
    my $r = chat('sk-lim', 'llama3');
    is($r->{status}, 200, 'llama3: 200');
    is($r->{headers}{'x-model'}, 'meta/llama-3-8b', 'its target');
};

subtest 'an alias does not open a model the key may not use' => sub {
    my $r = chat('sk-lim', 'meta/llama-3-8b');
    is($r->{status}, 404, "the target's own name is not in the list: 404");
};

$s->stop;
$seen->stop;

SKIP: {
    skip "no $Fairgate::Engine::MODEL", 1 unless -f $Fairgate::Engine::MODEL;

    subtest 'local mode: an alias is served by its target engine' => sub {
        my $e = Fairgate::Engine->new(backend => 'sim');
        $e->start;

        my $keys2 = Fairgate::Test::keys_file(
            ['sk-tiny', 'tiny-user', '-', 1, 'models=tiny'],
        );
        my $g = Fairgate::Test::gateway(
            engines => [['stories', $e]],
            http => "    fairgate_model_alias tiny stories260K;\n",
            user => '$http_x_user',
            locations => <<"END");
    location /k/v1/ {
        fairgate zone=llm queue=10 timeout=10s;
        fairgate_keys $keys2;
        add_header X-Model \$fairgate_model always;
        add_header X-Model-Requested \$fairgate_model_requested always;
        fairgate_engine_pass;
    }
END
        ok(wait_attached($g), 'the worker attached to the engine');

        my $body = sub {
            $json->encode({ model => $_[0], prompt => 'Once upon a time',
                            max_tokens => 4, temperature => 0 });
        };
        my $r = $g->post('/k/v1/completions', $body->('tiny'),
                         headers => ['Authorization: Bearer sk-tiny',
                                     'Content-Type: application/json']);
        is($r->{status}, 200, 'tiny, an alias of stories260K: 200')
            or diag($r->{body});
        is($r->{headers}{'x-model'}, 'stories260K', '$fairgate_model');
        is($r->{headers}{'x-model-requested'}, 'tiny',
           '$fairgate_model_requested');

        $r = $g->post('/k/v1/completions', $body->('stories260K'),
                      headers => ['Authorization: Bearer sk-tiny',
                                  'Content-Type: application/json']);
        is($r->{status}, 404, 'the key may use the alias, not the target');
        like($r->{body}, qr/model_not_found/, 'model_not_found');

        $r = $g->post('/v1/completions', $body->('nope'),
                      headers => ['Content-Type: application/json',
                                  'X-User: u']);
        is($r->{status}, 404, 'an unknown model: 404 as before');

        $g->stop;
        $e->stop;
    };
}

# what nginx -t refuses
my $bad = Fairgate::Test::keys_file(['sk-x', 'x', '-', 1, 'models=a,,b']);
my $bad2 = Fairgate::Test::keys_file(['sk-y', 'y', '-', 1, 'models=a',
                                      'models=b']);

Fairgate::Test::run_refused(
    ['a models list with an empty name', '',
     "location / { fairgate_keys $bad; }\n",
     qr/invalid models "models=a,,b" in keys file \S+:1, expected models=NAME\[,NAME\.\.\.\], once in \S+nginx\.conf:\d+/],
    ['models twice', '',
     "location / { fairgate_keys $bad2; }\n",
     qr/invalid models "models=b" in keys file \S+:1/],
    ['an alias with a quote', "fairgate_model_alias 'a\"b' c;\n", '',
     qr/invalid model name "a"b": printable ASCII.* in \S+nginx\.conf:\d+/],
    ['an alias twice', "fairgate_model_alias a b;\nfairgate_model_alias a c;\n",
     '', qr/duplicate model alias "a" in \S+nginx\.conf:\d+/],
    ['an alias with one name', "fairgate_model_alias a;\n", '',
     qr/invalid number of arguments in "fairgate_model_alias"/],
);

done_testing;
