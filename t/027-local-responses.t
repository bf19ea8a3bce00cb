#!/usr/bin/env perl

# Local mode's Responses API (POST /v1/responses) through the gateway,
# against fairgate-engine on stories260K: the Response object's shape and
# its text (the chat's, for the same messages), the stream's named events
# in OpenAI's order with consecutive sequence numbers and the same text,
# status "incomplete" at max_output_tokens and "completed" at a stop,
# input items of every role and text part, the refusals (images, item
# references, stored responses, a schema the compiler does not take,
# tools, reasoning) as OpenAI errors naming the field, and the zone's
# metering of it all.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";

use IO::Select;
use IO::Socket::INET;
use JSON::PP ();
use Test::More;
use Time::HiRes ();

use Fairgate::Test qw(:DEFAULT gateway);
use Fairgate::Engine qw(wait_attached);
use Fairgate::MockUpstream;

plan skip_all => "no $Fairgate::Engine::MODEL"
    unless -f $Fairgate::Engine::MODEL;

my $J = JSON::PP->new->utf8->canonical;
my $T = JSON::PP::true;
my $F = JSON::PP::false;


sub post {
    my ($s, $uri, $body) = @_;
    return $s->post($uri, ref $body ? $J->encode($body) : $body,
                    headers => ['Content-Type: application/json']);
}


# a stream of named events, strictly: "event: NAME" then one data line of
# JSON whose type is NAME, a blank line after each; no [DONE]
sub parse_events {
    my ($body) = @_;
    die "the stream does not end with a blank line\n"
        unless $body =~ /\n\n\z/;
    my @out;
    for my $e (split /\n\n/, $body) {
        die "not one event line and one data line: '$e'\n"
            unless $e =~ /\Aevent: ([a-z_.]+)\ndata: ([^\n]*)\z/;
        my ($name, $data) = ($1, $2);
        my $j = eval { $J->decode($data) } // die "not JSON: $@";
        die "event $name carries type $j->{type}\n"
            unless ($j->{type} // '') eq $name;
        push @out, $j;
    }
    return @out;
}


# the problems of a Response object, none when it has OpenAI's shape
sub check_response {
    my ($r, $status) = @_;
    my @bad;
    push @bad, "id $r->{id}" unless ($r->{id} // '') =~ /^resp_\w+$/;
    push @bad, 'object' unless ($r->{object} // '') eq 'response';
    push @bad, 'created_at' unless ($r->{created_at} // '') =~ /^\d+$/;
    push @bad, "status $r->{status}" unless ($r->{status} // '') eq $status;
    push @bad, 'model' unless ($r->{model} // '') eq 'stories260K';
    push @bad, 'output' unless ref $r->{output} eq 'ARRAY';
    push @bad, 'tools' unless ref $r->{tools} eq 'ARRAY' && !@{ $r->{tools} };
    push @bad, 'store' unless defined $r->{store} && !$r->{store};
    push @bad, 'error' if $status ne 'failed' && defined $r->{error};
    push @bad, 'text.format'
        unless ($r->{text}{format}{type} // '') eq 'text';
    for my $k (qw(temperature top_p parallel_tool_calls tool_choice
                  truncation metadata reasoning)) {
        push @bad, "no $k" unless exists $r->{$k};
    }
    return @bad if $status eq 'in_progress' || $status eq 'failed';

    my $m = $r->{output}[0] // {};
    push @bad, 'one message' unless @{ $r->{output} } == 1;
    push @bad, 'message type' unless ($m->{type} // '') eq 'message';
    push @bad, "message id $m->{id}" unless ($m->{id} // '') =~ /^msg_\w+$/;
    push @bad, 'role' unless ($m->{role} // '') eq 'assistant';
    push @bad, 'message status' unless ($m->{status} // '') eq $status;
    my $c = $m->{content}[0] // {};
    push @bad, 'output_text' unless ($c->{type} // '') eq 'output_text';
    push @bad, 'annotations' unless ref $c->{annotations} eq 'ARRAY';
    my $u = $r->{usage} // {};
    push @bad, 'usage'
        unless ($u->{input_tokens} // 0) > 0
               && defined $u->{output_tokens}
               && $u->{total_tokens} == $u->{input_tokens}
                                        + $u->{output_tokens}
               && defined $u->{input_tokens_details}{cached_tokens}
               && ($u->{output_tokens_details}{reasoning_tokens} // -1) == 0;
    push @bad, 'incomplete_details'
        unless $status eq 'incomplete'
               ? ($r->{incomplete_details}{reason} // '') eq
                 'max_output_tokens'
               : !defined $r->{incomplete_details};
    return @bad;
}


my $e = Fairgate::Engine->new(backend => 'cpu');
$e->start;
my $s = gateway(engines => [['stories', $e, 'dead_after=1s']], workers => 1);
ok(wait_attached($s), 'the worker attached to the engine');

my @messages = ({ role => 'system', content => 'You tell stories.' },
                { role => 'user', content => 'Once upon a time' });


subtest 'a Response, not streamed, is the chat underneath' => sub {
    my $r = post($s, '/v1/chat/completions',
                 { model => 'stories260K', max_tokens => 12,
                   temperature => 0, messages => \@messages });
    is($r->{status}, 200, 'the chat: 200');
    my $chat = $J->decode($r->{body});

    $r = post($s, '/v1/responses',
              { model => 'stories260K', instructions => 'You tell stories.',
                input => 'Once upon a time', max_output_tokens => 12,
                temperature => 0, store => $F,
                metadata => { run => 't/027', 'k"ey' => "v\x{e9}" } });
    is($r->{status}, 200, "the response: 200") or diag($r->{body});
    like($r->{headers}{'content-type'}, qr{^application/json},
         'application/json');
    my $j = $J->decode($r->{body});
    my @bad = check_response($j, 'incomplete');
    is("@bad", '', 'a Response in OpenAI\'s shape, incomplete at '
                   . 'max_output_tokens');
    is($j->{output}[0]{content}[0]{text},
       $chat->{choices}[0]{message}{content},
       'its text is the chat\'s for the same messages');
    is($j->{usage}{output_tokens}, 12, 'usage: 12 output tokens');
    is($j->{usage}{input_tokens}, $chat->{usage}{prompt_tokens},
       'usage: the chat\'s prompt tokens');
    is($j->{instructions}, 'You tell stories.', 'instructions said back');
    is($j->{max_output_tokens}, 12, 'max_output_tokens said back');
    is($j->{temperature}, 0, 'temperature said back');
    is_deeply($j->{metadata}, { run => 't/027', 'k"ey' => "v\x{e9}" },
              'metadata said back');

    # a stop string (an extension, as in chat) completes it
    my $stop = ' girl';
    like($j->{output}[0]{content}[0]{text}, qr/\Q$stop\E/,
         "the text has '$stop'");
    $r = post($s, '/v1/responses',
              { model => 'stories260K', input => \@messages,
                max_output_tokens => 30, temperature => 0,
                stop => $stop });
    $j = $J->decode($r->{body});
    @bad = check_response($j, 'completed');
    is("@bad", '', "completed at the stop string '$stop'");
    unlike($j->{output}[0]{content}[0]{text}, qr/\Q$stop\E/,
           'the stop string is not sent');
};


subtest 'streamed: OpenAI\'s events in order, numbered' => sub {
    my $r = post($s, '/v1/responses',
                 { model => 'stories260K', input => 'Once upon a time',
                   instructions => 'You tell stories.',
                   max_output_tokens => 12, temperature => 0,
                   stream => $T });
    is($r->{status}, 200, 'served');
    like($r->{headers}{'content-type'}, qr{^text/event-stream},
         'text/event-stream');
    my @ev = eval { parse_events($r->{body}) };
    ok(@ev, 'every event is "event: NAME" and its data of that type')
        or diag($@);

    my @seq = map { $_->{sequence_number} } @ev;
    is("@seq", join(' ', 0 .. $#ev), 'sequence numbers 0, 1, 2 ...');

    my @names = map { $_->{type} } @ev;
    my @deltas = grep { $_ eq 'response.output_text.delta' } @names;
    is(scalar(@deltas), 12, 'one delta per token');
    my $order = join ' ', grep { $_ ne 'response.output_text.delta' }
                          @names;
    is($order, 'response.created response.in_progress '
               . 'response.output_item.added response.content_part.added '
               . 'response.output_text.done response.content_part.done '
               . 'response.output_item.done response.incomplete',
       'the events around the deltas, in OpenAI\'s order');
    my @after = grep { $names[$_] eq 'response.output_text.delta' }
                0 .. $#names;
    is("@after", join(' ', 4 .. 15), 'the deltas between the opening and '
                                     . 'the end');

    my @bad = check_response($ev[0]{response}, 'in_progress');
    is("@bad", '', 'response.created carries the Response in progress');
    my $id = $ev[0]{response}{id};
    my $item = $ev[2]{item}{id};
    like($item, qr/^msg_\w+$/, 'the item has a message id');
    my @where = grep { ($_->{item_id} // $item) ne $item
                       || ($_->{output_index} // 0) != 0
                       || ($_->{content_index} // 0) != 0 } @ev;
    is(scalar(@where), 0, 'every event names the one item and part');

    my $text = join '', map { $_->{delta} }
                        grep { $_->{type} =~ /delta$/ } @ev;
    is($ev[-4]{text}, $text, 'output_text.done has the deltas\' text');
    is($ev[-3]{part}{text}, $text, 'content_part.done too');
    is($ev[-2]{item}{content}[0]{text}, $text, 'output_item.done too');
    @bad = check_response($ev[-1]{response}, 'incomplete');
    is("@bad", '', 'the last event carries the whole Response');
    is($ev[-1]{response}{id}, $id, 'with the id it opened with');
    is($ev[-1]{response}{output}[0]{content}[0]{text}, $text,
       'and the text');
    is($ev[-1]{response}{usage}{output_tokens}, 12, 'usage: 12 tokens');

    $r = post($s, '/v1/responses',
              { model => 'stories260K', input => 'Once upon a time',
                instructions => 'You tell stories.',
                max_output_tokens => 12, temperature => 0 });
    is($J->decode($r->{body})->{output}[0]{content}[0]{text}, $text,
       'the same text as not streamed');
};


subtest 'input items: roles and text parts' => sub {
    my $input = [
        { role => 'developer', content => 'You tell stories.' },
        { type => 'message', role => 'user',
          content => [{ type => 'input_text', text => 'Once upon' },
                      { type => 'input_text', text => 'a time' }] },
        { type => 'message', role => 'assistant', id => 'msg_earlier',
          status => 'completed',
          content => [{ type => 'output_text', text => 'there was',
                        annotations => [] }] },
        { role => 'user', content => 'Go on.' },
    ];
    my $r = post($s, '/v1/responses',
                 { model => 'stories260K', input => $input,
                   max_output_tokens => 4, temperature => 0,
                   tool_choice => 'auto', tools => [],
                   parallel_tool_calls => $F, truncation => 'auto',
                   reasoning => { effort => undef }, include => [],
                   text => { format => { type => 'text' } }, store => $T,
                   user => 'u1' });
    is($r->{status}, 200, 'every role, text parts, harmless fields: 200')
        or diag($r->{body});
    my $j = $J->decode($r->{body});
    my @bad = check_response($j, 'incomplete');
    is("@bad", '', 'a Response');
    is($j->{tool_choice}, 'auto', 'tool_choice said back');
    ok(!$j->{parallel_tool_calls}, 'parallel_tool_calls said back');
    is($j->{truncation}, 'auto', 'truncation said back');
    is($j->{user}, 'u1', 'user said back');
    ok(!$j->{store}, 'store: false, for nothing is stored');
};


subtest 'refused, as OpenAI errors that name the field' => sub {
    my %base = (model => 'stories260K', input => 'Hi');
    my @cases = (
        [{ %base, input => [{ role => 'user', content => [
             { type => 'input_text', text => 'What is this?' },
             { type => 'input_image', image_url => 'https://x/y.png' }] }] },
         'input[0].content[1].type', qr/input_image.*text only/],
        [{ %base, input => [{ role => 'user', content => 'a' },
                            { type => 'item_reference', id => 'msg_1' }] },
         'input[1]', qr/item_reference.*does not store.*store: false/],
        [{ %base, input => [{ type => 'function_call_output',
                              call_id => 'c', output => '1' }] },
         'input', qr/No tool call found for function call output/],
        [{ %base, input => [{ role => 'tool', content => 'x' }] },
         'input[0].role', qr/'tool'/],
        [{ %base, previous_response_id => 'resp_1' },
         'previous_response_id', qr/does not store/],
        [{ %base, conversation => 'conv_1' },
         'conversation', qr/does not store/],
        [{ %base, text => { format => { type => 'json_schema', name => 'x',
                                        schema => { type => 'number',
                                                    multipleOf => 2 } } } },
         'text.format.schema', qr/"multipleOf" is not supported/],
        [{ %base, text => { format => { type => 'xml' } } },
         'text.format.type', qr/'xml'/],
        [{ %base, tools => [{ type => 'function', name => 'f' },
                            { type => 'web_search' }] },
         'tools[1].type', qr/'web_search'.*functions only/],
        [{ %base, tool_choice => 'required' }, 'tool_choice', qr/tool/],
        [{ %base, reasoning => { effort => 'high' } },
         'reasoning.effort', qr/do not reason/],
        [{ %base, include => ['message.output_text.logprobs'] },
         'include[0]', qr/cannot be included/],
        [{ %base, background => $T }, 'background', qr/only false/],
        [{ model => 'stories260K' }, 'input', qr/Missing required/],
        [{ %base, messages => [] }, 'messages', qr/takes 'input'/],
        [{ %base, max_tokens => 5 }, 'max_tokens', qr/max_output_tokens/],
        [{ %base, frequency_penalty => 0 }, 'frequency_penalty',
         qr/Unrecognized/],
        [{ %base, input => [] }, 'input', qr/empty array/],
        [{ %base, max_output_tokens => 0 }, 'max_output_tokens',
         qr/>= 1/],
    );
    for my $c (@cases) {
        my ($body, $param, $re) = @$c;
        my $r = post($s, '/v1/responses', $body);
        my $j = eval { $J->decode($r->{body}) } // {};
        my $what = "$param: " . $J->encode($body);
        is($r->{status}, 400, "400 for $what");
        is($j->{error}{param}, $param, '... naming the field');
        like($j->{error}{message} // '', $re, '... saying why');
        is($j->{error}{type}, 'invalid_request_error', '... of its type');
    }

    my $r = post($s, '/v1/responses',
                 { model => 'nope', input => 'Hi' });
    is($r->{status}, 404, 'an unknown model: 404');
    is($J->decode($r->{body})->{error}{code}, 'model_not_found',
       'model_not_found');
};


subtest 'metered as chat: the zone counts the tokens' => sub {
    my $before = $s->status_json->{zones}[0]{tokens_out} // 0;
    my $r = post($s, '/v1/responses',
                 { model => 'stories260K', input => 'Once upon a time',
                   max_output_tokens => 7, temperature => 0 });
    is($r->{status}, 200, 'served');
    $r = post($s, '/v1/responses',
              { model => 'stories260K', input => 'Once upon a time',
                max_output_tokens => 5, temperature => 0, stream => $T });
    is($r->{status}, 200, 'streamed: 200');
    my $after = $s->status_json->{zones}[0]{tokens_out} // 0;
    is($after - $before, 12, 'the zone counted 7 + 5 output tokens');
};


is($s->stop, 0, 'nginx exits cleanly');
unlike($s->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alerts');
$e->stop;


# a long stream over HTTP/1.0 (no chunked encoding), read until its first
# delta, then to its end once the engine is killed
subtest 'the engine lost mid-stream: error, then response.failed' => sub {
    my $slow = Fairgate::Engine->new(
        backend => 'sim', args => ['--step-model', 'linear:0.0001,0.005']);
    $slow->start;
    my $g = gateway(engines => [['stories', $slow, 'dead_after=500ms']],
                    workers => 1);
    ok(wait_attached($g), 'attached to a slow engine');

    my $body = $J->encode({ model => 'stories260K', input => 'Go on',
                            max_output_tokens => 2000, stream => $T });
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1',
                                     PeerPort => $g->port, Proto => 'tcp')
        or die "connect: $!\n";
    print {$sock} "POST /v1/responses HTTP/1.0\r\nHost: x\r\n"
                  . "Content-Type: application/json\r\n"
                  . "Content-Length: " . length($body) . "\r\n\r\n$body";
    my $raw = '';
    my $sel = IO::Select->new($sock);
    my $deadline = Time::HiRes::time() + 10;
    while (Time::HiRes::time() < $deadline
           && $raw !~ /response\.output_text\.delta/)
    {
        last unless $sel->can_read(1);
        sysread($sock, $raw, 65536, length $raw) or last;
    }
    like($raw, qr/response\.output_text\.delta/, 'deltas stream');

    $slow->stop('KILL');

    $deadline = Time::HiRes::time() + 15;
    while (Time::HiRes::time() < $deadline) {
        last unless $sel->can_read(1);
        sysread($sock, $raw, 65536, length $raw) or last;
    }
    my ($head, $events) = split /\r\n\r\n/, $raw, 2;
    like($head, qr{^HTTP/1\.1 200}, 'the stream had started: 200');
    my @ev = eval { parse_events($events) };
    ok(@ev, 'it ends as a strict stream of events') or diag($@);
    my @seq = map { $_->{sequence_number} } @ev;
    is("@seq", join(' ', 0 .. $#ev), 'numbered to the end');
    is($ev[-2]{type}, 'error', 'an error event');
    is($ev[-2]{code}, 'engine_lost', '... saying the engine was lost');
    is($ev[-1]{type}, 'response.failed', 'then response.failed');
    my @bad = check_response($ev[-1]{response}, 'failed');
    is("@bad", '', '... with the Response, failed');
    is($ev[-1]{response}{error}{code}, 'engine_lost', '... and its error');

    is($g->stop, 0, 'nginx exits cleanly');
};

# drop-in mode forwards /v1/responses to its upstream as before: local
# mode's endpoint is not in its way; the upstream's usage, in the
# Responses API's names and places, settles what the tenant is charged
subtest 'drop-in: /v1/responses goes upstream, its usage read' => sub {
    my $up = Fairgate::MockUpstream->new;
    my $g = gateway(pass => 'proxy_pass http://' . $up->addr);
    my $r = $g->post('/v1/responses',
                     $J->encode({ model => 'm', input => 'Hi',
                                  max_output_tokens => 5 }),
                     headers => ['Content-Type: application/json',
                                 'X-Tag: resp1']);
    is($r->{status}, 200, 'the upstream\'s answer');
    is(join(' ', $up->served), 'resp1', 'the upstream served it');
    is($g->stop, 0, 'nginx exits cleanly');
    $up->stop;

    my $body = '{"id":"resp_1","object":"response","status":"completed",'
        . '"output":[{"type":"message","id":"msg_1","role":"assistant",'
        . '"content":[{"type":"output_text","text":"Hello there.",'
        . '"annotations":[]}]}],"usage":{"input_tokens":11,'
        . '"input_tokens_details":{"cached_tokens":0},"output_tokens":3,'
        . '"output_tokens_details":{"reasoning_tokens":0},'
        . '"total_tokens":14},"user":null,"metadata":{}}';
    my $events = join '', map { "event: $_->[0]\ndata: $_->[1]\n\n" }
        ['response.created', '{"type":"response.created","response":{}}'],
        ['response.output_text.delta',
         '{"type":"response.output_text.delta","delta":"Hello"}'],
        ['response.completed', '{"type":"response.completed","response":'
         . '{"usage":{"input_tokens":11,"output_tokens":5,'
         . '"total_tokens":16}}}'];
    $events =~ s/"/\\"/g;
    $events =~ s/\n/\\n/g;
    my $static = Fairgate::Test::Server->new(module => 0, config => <<"END");
    location = /v1/responses {
        default_type application/json;
        return 200 '$body';
    }
    location = /v1/stream/responses {
        default_type text/event-stream;
        return 200 "$events";
    }
END
    ok($static->start, 'a static upstream') or diag($static->last_error);
    $g = gateway(pass => 'proxy_pass http://127.0.0.1:' . $static->port);

    my $out = sub { $g->status_json->{zones}[0]{tokens_out} // 0 };
    my $before = $out->();
    $r = $g->post('/v1/responses', $J->encode({ model => 'm', input => 'Hi',
                                                max_output_tokens => 50 }),
                  headers => ['Content-Type: application/json']);
    is($r->{status}, 200, 'a Response from upstream');
    is($out->() - $before, 3, 'charged its usage\'s 3 output tokens');

    $before = $out->();
    $r = $g->post('/v1/stream/responses',
                  $J->encode({ model => 'm', input => 'Hi', stream => $T,
                               max_output_tokens => 50 }),
                  headers => ['Content-Type: application/json']);
    is($r->{status}, 200, 'a stream of events from upstream');
    is($out->() - $before, 5, 'charged its last event\'s 5 output tokens');

    is($g->stop, 0, 'nginx exits cleanly');
    $static->stop;
};

done_testing();
