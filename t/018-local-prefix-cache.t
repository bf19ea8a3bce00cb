#!/usr/bin/env perl

# Local mode's answers with the engine's prefix cache: a second request
# with the same long prompt reports usage.prompt_tokens_details
# .cached_tokens > 0 (as OpenAI writes it: always there, 0 when nothing
# was cached), streamed and not, and its greedy text is the first's; the
# engine with --prefix-cache off gives the same text and reports 0; at the
# engine's stop it says what its cache did.

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

# some 200 tokens of stories260K's vocabulary
my $PROMPT = join ' ', ('Once upon a time, there was a little girl named '
                        . 'Lily. She loved to play outside in the park.')
                       x 6;


sub server {
    my ($engine) = @_;
    return gateway(engines => [['stories', $engine, 'dead_after=1s']]);
}


sub complete {
    my ($s, $stream) = @_;
    my $r = $s->post('/v1/completions', $J->encode({
        model => 'stories260K', prompt => $PROMPT, max_tokens => 16,
        temperature => 0,
        $stream ? (stream => JSON::PP::true,
                   stream_options => { include_usage => JSON::PP::true })
                : () }),
        headers => ['Content-Type: application/json']);
    die "status $r->{status}: $r->{body}\n" unless $r->{status} == 200;
    return $J->decode($r->{body}) unless $stream;

    # streamed: the text and the usage chunk
    my @ev = parse_sse($r->{body});
    pop @ev;
    my @bad = map { check_chunk($_, 'completion') } @ev;
    die "chunks off the schema: @bad\n" if @bad;
    my $text = join '', map { $_->{choices}[0]{text} // '' }
                        grep { @{ $_->{choices} } } @ev;
    return { choices => [{ text => $text }], usage => $ev[-1]{usage} };
}


sub cached { $_[0]{usage}{prompt_tokens_details}{cached_tokens} }


my ($text_on, $prompt_tokens);

subtest 'the cache on: the second request reuses the first one\'s blocks'
    => sub {
    my $e = Fairgate::Engine->new(backend => 'cpu');
    $e->start;
    my $s = server($e);
    ok(wait_attached($s), 'the worker attached to the engine');

    my $a = complete($s, 0);
    $prompt_tokens = $a->{usage}{prompt_tokens};
    cmp_ok($prompt_tokens, '>', 150, "a long prompt ($prompt_tokens tokens)");
    is(cached($a), 0, 'the first: prompt_tokens_details.cached_tokens 0');
    $text_on = $a->{choices}[0]{text};

    my $b = complete($s, 0);
    cmp_ok(cached($b), '>', 0, 'the second: cached_tokens ' . cached($b));
    cmp_ok(cached($b), '<', $prompt_tokens, '... fewer than the prompt');
    is(cached($b), int(($prompt_tokens - 1) / 16) * 16,
       '... every whole block before the last token');
    is($b->{choices}[0]{text}, $text_on, 'the same greedy text');
    is($b->{usage}{prompt_tokens}, $prompt_tokens, 'the same prompt_tokens');

    my $c = complete($s, 1);
    is(cached($c), cached($b), 'streamed: the usage chunk says it too');
    is($c->{choices}[0]{text}, $text_on, 'the same text, streamed');

    is($s->stop, 0, 'nginx exits cleanly');
    $e->stop;
    like($e->log_text, qr/prefix cache: \d+ of \d+ prompt tokens reused/,
         'the engine says at its stop what its cache did');
};


subtest 'the cache off: the same text, nothing cached' => sub {
    my $e = Fairgate::Engine->new(backend => 'cpu',
                                  args => ['--prefix-cache', 'off']);
    $e->start;
    my $s = server($e);
    ok(wait_attached($s), 'attached');

    for my $i (1, 2) {
        my $r = complete($s, $i == 2);
        is(cached($r), 0, "request $i: cached_tokens 0");
        is($r->{choices}[0]{text}, $text_on,
           "request $i: the text the cache on gave");
        is($r->{usage}{prompt_tokens}, $prompt_tokens, 'the prompt tokens');
    }

    is($s->stop, 0, 'nginx exits cleanly');
    $e->stop;
    like($e->log_text, qr/prefix cache off/, 'the engine said it was off');
};

done_testing();
