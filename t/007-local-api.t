#!/usr/bin/env perl

# Local mode's OpenAI API through the gateway, against fairgate-engine:
# streamed chunks under a strict SSE + JSON reader and OpenAI's chunk
# schema, non-streamed bodies, usage equal to the tokens produced,
# stories260K's greedy text on the cpu backend, and bad requests that get
# 400/404 OpenAI errors without costing the engine anything.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use JSON::PP ();
use Test::More;

use Fairgate::Test qw(:DEFAULT gateway);
use Fairgate::Engine qw(parse_sse check_chunk wait_attached);

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

my $J = JSON::PP->new->canonical;


sub server {
    my ($engine, %o) = @_;
    return gateway(engines => [['stories', $engine, 'dead_after=1s']],
                   workers => $o{workers} // 1,
                   locations => <<"END");
    location /bare/v1/ {
        fairgate_engine_pass stories;
    }
END
}


sub post {
    my ($s, $uri, $body) = @_;
    return $s->post($uri, ref $body ? $J->encode($body) : $body,
                    headers => ['Content-Type: application/json']);
}


subtest 'cpu backend: stories260K greedy, streamed and not' => sub {
    my $e = Fairgate::Engine->new(backend => 'cpu');
    $e->start;
    my $s = server($e);
    ok(wait_attached($s), 'the worker attached to the engine');

    my $r = post($s, '/v1/completions',
                 { model => 'stories260K', prompt => 'Once upon a time',
                   max_tokens => 12, temperature => 0 });
    is($r->{status}, 200, 'completion: 200');
    my $j = $J->decode($r->{body});
    like($j->{choices}[0]{text}, qr/^, there was a little girl named Lily/,
         'the greedy continuation');
    is($j->{choices}[0]{finish_reason}, 'length', 'finish_reason length');
    is($j->{usage}{completion_tokens}, 12, 'usage: 12 tokens produced');
    is($j->{usage}{prompt_tokens}, 5, 'usage: the 5 prompt tokens');
    is($j->{usage}{total_tokens}, 17, 'usage: the total');
    is($j->{object}, 'text_completion', 'a text_completion');
    is($j->{model}, 'stories260K', 'the model id');

    $r = post($s, '/v1/chat/completions',
              { model => 'stories260K', max_tokens => 12, temperature => 0,
                stream => JSON::PP::true,
                stream_options => { include_usage => JSON::PP::true },
                messages => [{ role => 'user',
                               content => 'Once upon a time' }] });
    is($r->{status}, 200, 'chat stream: 200');
    like($r->{headers}{'content-type'}, qr{^text/event-stream},
         'text/event-stream');
    my @ev = eval { parse_sse($r->{body}) };
    ok(@ev, 'the stream parses strictly') or diag($@);
    pop @ev;
    my @bad = map { check_chunk($_, 'chat') } @ev;
    is("@bad", '', 'every chunk follows the schema');
    is($ev[0]{choices}[0]{delta}{role}, 'assistant', 'the role chunk first');
    my $text = join '', map { $_->{choices}[0]{delta}{content} // '' }
                        grep { @{ $_->{choices} } } @ev;
    my @content = grep { @{ $_->{choices} }
                         && length($_->{choices}[0]{delta}{content} // '') }
                  @ev;
    like($text, qr/^, there was a little girl named Lily/,
         'the same text, streamed');
    my ($fin) = grep { @{ $_->{choices} }
                       && $_->{choices}[0]{finish_reason} } @ev;
    is($fin->{choices}[0]{finish_reason}, 'length', 'finish chunk: length');
    is($ev[-1]{usage}{completion_tokens}, 12,
       'usage chunk last: 12 tokens');
    is(scalar(@content), 12, 'one content chunk per token');

    # a stop string ends it, and is not sent
    $r = post($s, '/v1/completions',
              { model => 'stories260K', prompt => 'Once upon a time',
                max_tokens => 30, temperature => 0, stop => [' girl'] });
    $j = $J->decode($r->{body});
    is($j->{choices}[0]{text}, ', there was a little',
       'stop string: the text before it');
    is($j->{choices}[0]{finish_reason}, 'stop', 'finish_reason stop');

    # no zone in the location: the same, without fair queuing
    $r = post($s, '/bare/v1/completions',
              { model => 'stories260K', prompt => 'Once upon a time',
                max_tokens => 5, temperature => 0 });
    is($r->{status}, 200, 'without a zone: 200');

    $r = $s->get('/v1/models');
    $j = $J->decode($r->{body});
    is($j->{object}, 'list', '/v1/models: a list');
    is($j->{data}[0]{id}, 'stories260K', '/v1/models: the model id');

    my $st = $s->status_json->{zones}[0];
    cmp_ok($st->{tokens_out}, '>=', 12 + 12 + 5, 'the zone counted output');

    is($s->stop, 0, 'nginx exits cleanly');
    unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
    $e->stop;
};


subtest 'sim backend: usage equals the tokens produced' => sub {
    my $e = Fairgate::Engine->new(backend => 'sim',
                                  args => ['--speedup', '1000']);
    $e->start;
    my $s = server($e, workers => 2);
    ok(wait_attached($s), 'attached');

    for my $n (1, 7, 64) {
        my $r = post($s, '/v1/chat/completions',
                     { model => 'stories260K', max_tokens => $n,
                       stream => JSON::PP::true,
                       stream_options => { include_usage => JSON::PP::true },
                       messages => [{ role => 'system', content => 'Be.' },
                                    { role => 'user', content => 'Hi' }] });
        my @ev = eval { parse_sse($r->{body}) };
        ok(@ev, "$n: strict SSE") or diag($@);
        pop @ev;
        my @bad = map { check_chunk($_, 'chat') } @ev;
        is("@bad", '', "$n: the schema");
        my @content = grep { @{ $_->{choices} }
                             && exists $_->{choices}[0]{delta}{content}
                             && !exists $_->{choices}[0]{delta}{role} } @ev;
        is($ev[-1]{usage}{completion_tokens}, $n, "$n: usage");
        is(scalar @content, $n, "$n: as many content chunks as tokens");

        $r = post($s, '/v1/completions',
                  { model => 'stories260K', max_tokens => $n,
                    prompt => 'Hello there' });
        my $j = $J->decode($r->{body});
        is($j->{usage}{completion_tokens}, $n, "$n: usage, not streamed");
        is($j->{usage}{total_tokens},
           $j->{usage}{prompt_tokens} + $n, "$n: total");
    }

    is($s->stop, 0, 'nginx exits cleanly');
    $e->stop;
};


subtest 'bad requests: OpenAI errors, no engine work' => sub {
    my $e = Fairgate::Engine->new(backend => 'sim',
                                  args => ['--speedup', '1000']);
    $e->start;
    my $s = server($e);
    ok(wait_attached($s), 'attached');

    my $before = $s->status_json->{engines}[0]{load};

    my @cases = (
        ['broken JSON', '/v1/chat/completions', '{"model": "stories260K",',
         400, undef],
        ['unknown model', '/v1/chat/completions',
         { model => 'gpt-9', messages => [{ role => 'user',
                                             content => 'x' }] },
         404, 'model'],
        ['prompt beyond the context', '/v1/completions',
         { model => 'stories260K', prompt => 'Once upon a time ' x 600,
           max_tokens => 1 }, 400, 'prompt'],
        ['max_tokens beyond the context', '/v1/completions',
         { model => 'stories260K', prompt => 'x', max_tokens => 100000 },
         400, undef],
        ['max_tokens 0', '/v1/completions',
         { model => 'stories260K', prompt => 'x', max_tokens => 0 },
         400, 'max_tokens'],
        ['max_tokens -1', '/v1/chat/completions',
         { model => 'stories260K', max_tokens => -1,
           messages => [{ role => 'user', content => 'x' }] },
         400, 'max_tokens'],
        ['n = 17', '/v1/chat/completions',
         { model => 'stories260K', n => 17,
           messages => [{ role => 'user', content => 'x' }] }, 400, 'n'],
        ['messages not an array', '/v1/chat/completions',
         { model => 'stories260K', messages => 'hello' }, 400, 'messages'],
        ['temperature a string', '/v1/chat/completions',
         { model => 'stories260K', temperature => 'hot',
           messages => [{ role => 'user', content => 'x' }] },
         400, 'temperature'],
        ['tools', '/v1/chat/completions',
         { model => 'stories260K', tools => [{ type => 'function' }],
           messages => [{ role => 'user', content => 'x' }] }, 400, undef],
    );

    for my $c (@cases) {
        my ($name, $uri, $body, $status, $param) = @$c;
        my $r = post($s, $uri, $body);
        is($r->{status}, $status, "$name: $status");
        my $j = eval { $J->decode($r->{body}) } // {};
        ok(ref $j->{error} eq 'HASH' && length $j->{error}{message}
           && $j->{error}{type},
           "$name: an OpenAI error body") or diag($r->{body});
        is($j->{error}{param}, $param, "$name: param")
            if defined $param;
    }

    my $after = $s->status_json->{engines}[0]{load};
    is($after->{submitted}, $before->{submitted},
       'the engine took none of them');
    is($after->{prefill_tokens}, $before->{prefill_tokens},
       'and prefilled nothing');

    is($s->stop, 0, 'nginx exits cleanly');
    $e->stop;
};


done_testing();
